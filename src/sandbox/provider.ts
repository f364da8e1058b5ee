// Port of DeerFlow sandbox/sandbox_provider.py (SandboxProvider) and the lazy acquisition of sandbox/tools.py
// (ensure_sandbox_initialized). The local provider is in local-provider.ts, the tools in src/tools/sandbox/.
import { runContextOf } from "../agents/run-context.js";

/**
 * Hands out sandboxes per thread. `acquire` returns the id of the thread's sandbox (creating it if needed; calling
 * it twice for one thread should return the same id); `release` gives it back when a run ends. Mirrors DeerFlow
 * `SandboxProvider.acquire` / `release`.
 */
export interface SandboxProvider {
  /**
   * @param threadId The thread the sandbox serves. @param options.userId Owner of the thread (default `default`).
   * @returns The sandbox id.
   */
  acquire(threadId: string, options?: { userId?: string }): Promise<string> | string;
  /** @param sandboxId An id returned by {@link acquire}. */
  release(sandboxId: string): Promise<void> | void;
}

/** The parts of a tool's runtime (the `config` a LangChain tool receives) that lazy acquisition uses. */
export interface SandboxToolRuntime {
  /** Agent state as the tool sees it; `state.sandbox` is written on acquisition. */
  state?: { sandbox?: { sandbox_id: string } | null } | Record<string, unknown>;
  /** Runtime context; `context.sandbox_id` is written on acquisition (when the object is writable). */
  context?: Record<string, unknown> | null;
  configurable?: Record<string, unknown>;
}

/** The sandbox id already recorded for the run: `state.sandbox.sandbox_id`, else `context.sandbox_id`. */
export function currentSandboxId(runtime: SandboxToolRuntime | undefined): string | undefined {
  const fromState = (runtime?.state as { sandbox?: { sandbox_id?: unknown } | null } | undefined)?.sandbox?.sandbox_id;
  if (typeof fromState === "string" && fromState) return fromState;
  const fromContext = runtime?.context?.sandbox_id;
  return typeof fromContext === "string" && fromContext ? fromContext : undefined;
}

/**
 * Returns the run's sandbox id, acquiring one from `provider` on first use (DeerFlow
 * `ensure_sandbox_initialized`). A new id is written to `runtime.state.sandbox` and `runtime.context.sandbox_id`,
 * which is how SandboxMiddleware notices the acquisition and records `{sandbox: {sandbox_id}}` in the graph
 * state. A tool that runs without a runtime context should instead return a Command whose update carries
 * `sandbox`.
 * @throws Error "Thread ID is required to acquire a sandbox" when neither the context nor `configurable` has one.
 */
export async function ensureSandbox(runtime: SandboxToolRuntime, provider: SandboxProvider): Promise<string> {
  const existing = currentSandboxId(runtime);
  if (existing) return existing;
  const { threadId, userId } = runContextOf(runtime);
  if (!threadId) throw new Error("Thread ID is required to acquire a sandbox");
  const sandboxId = await provider.acquire(threadId, { userId });
  if (runtime.state && typeof runtime.state === "object" && !Object.isFrozen(runtime.state)) {
    (runtime.state as Record<string, unknown>).sandbox = { sandbox_id: sandboxId };
  }
  if (runtime.context && !Object.isFrozen(runtime.context)) runtime.context.sandbox_id = sandboxId;
  return sandboxId;
}
