// Port of DeerFlow sandbox/middleware.py (SandboxMiddleware).
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, isCommand, StateSchema } from "@langchain/langgraph";
import type { ToolCallHandler } from "langchain";
import { z } from "zod";
import { getLogger } from "../../logger.js";
import { currentSandboxId, type SandboxProvider } from "../../sandbox/provider.js";
import { ThreadStateFields, type SandboxState } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";
import { runContextOf } from "../run-context.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];
type HookRuntime = { context?: Record<string, unknown>; configurable?: Record<string, unknown> };
type SandboxHook = (state: { messages: BaseMessage[]; sandbox?: SandboxState | null }, runtime: HookRuntime) => Promise<Record<string, unknown> | undefined>;

/** Options of {@link SandboxMiddleware}. */
export interface SandboxMiddlewareOptions {
  /** True (default): sandboxes are acquired by the first tool that needs one. False: acquired before the agent runs. */
  lazyInit?: boolean;
  /** Hands out sandboxes. Without one the middleware only records acquisitions made by tools. */
  provider?: SandboxProvider;
}

/** `result` with `sandbox` recorded: a tool message becomes a Command; a Command with a dict update gains the key. */
export function withSandboxUpdate(result: ToolMessage | Command, sandbox: SandboxState): ToolMessage | Command {
  if (ToolMessage.isInstance(result)) return new Command({ update: { sandbox, messages: [result] } });
  if (isCommand(result) && result.update && typeof result.update === "object" && !Array.isArray(result.update)) {
    const update = result.update as Record<string, unknown>;
    if (update.sandbox) return result;
    return new Command({ graph: result.graph, goto: result.goto, resume: result.resume, update: { ...update, sandbox } });
  }
  return result;
}

/** State and context keys of SandboxMiddleware (one instance for every build: zod compiles a parser per instance). */
const SandboxStateSchema = new StateSchema({ sandbox: ThreadStateFields.sandbox });
const SandboxContextSchema = z.looseObject({ thread_id: z.string().optional(), sandbox_id: z.string().optional() });

/**
 * Makes a thread's sandbox part of the graph state. Lazy (default): nothing happens before the agent; a tool
 * acquires the sandbox on first use (`ensureSandbox` in src/sandbox/provider.ts writes the id to the tool's runtime
 * state and context), and this middleware, comparing the sandbox id before and after each tool call, turns that
 * call's result into a state update `{sandbox: {sandbox_id}, messages: [result]}` (or adds `sandbox` to a Command's
 * update); when the id was already known the result passes through untouched.
 * Eager (`lazyInit: false`, needs a provider): acquires in beforeAgent when the state has none and a thread id exists.
 * With a provider, afterAgent releases the sandbox recorded in state (else in context).
 * Hooks: wrapToolCall; beforeAgent only when eager with a provider; afterAgent only with a provider — so without a
 * provider it adds no graph node.
 */
export class SandboxMiddleware extends DeerflowMiddleware {
  readonly name = "SandboxMiddleware";
  readonly stateSchema = SandboxStateSchema;
  /** Context keys the node hooks read (they only see their schema's keys). */
  readonly contextSchema = SandboxContextSchema;
  readonly lazyInit: boolean;
  readonly provider?: SandboxProvider;
  declare readonly beforeAgent?: SandboxHook;
  declare readonly afterAgent?: SandboxHook;

  constructor(options: SandboxMiddlewareOptions = {}) {
    super();
    this.lazyInit = options.lazyInit ?? true;
    this.provider = options.provider;
    const self = this as { beforeAgent?: SandboxHook; afterAgent?: SandboxHook };
    if (this.provider && !this.lazyInit) self.beforeAgent = (state, runtime) => this.acquireEagerly(state, runtime);
    if (this.provider) self.afterAgent = (state, runtime) => this.release(state, runtime);
  }

  private async acquireEagerly(state: { sandbox?: SandboxState | null }, runtime: HookRuntime) {
    if (state.sandbox?.sandbox_id) return undefined;
    const { threadId, userId } = runContextOf(runtime);
    if (!threadId) return undefined;
    return { sandbox: { sandbox_id: await this.provider!.acquire(threadId, { userId }) } };
  }

  private async release(state: { sandbox?: SandboxState | null }, runtime: HookRuntime) {
    const id = state.sandbox?.sandbox_id ?? runtime.context?.sandbox_id;
    if (typeof id !== "string" || !id) return undefined;
    try {
      await this.provider!.release(id);
    } catch (err) {
      getLogger().warn({ sandbox_id: id, err: (err as Error).message }, "sandbox release failed");
    }
    return undefined;
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const view = () => ({ state: request.state as Record<string, unknown>, context: request.runtime?.context as Record<string, unknown> | undefined });
    if (currentSandboxId(view())) return handler(request);
    const result = await handler(request);
    const acquired = currentSandboxId(view());
    return acquired ? withSandboxUpdate(result, { sandbox_id: acquired }) : result;
  }
}
