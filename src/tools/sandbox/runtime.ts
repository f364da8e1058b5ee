// What a sandbox tool needs from its runtime config (DeerFlow sandbox/tools.py ensure_sandbox_initialized,
// get_thread_data, the output truncation helpers and the per-tool error texts).
import type { AppConfig } from "../../config/schema.js";
import { SandboxConfigSchema } from "../../sandbox/sandbox-config.js";
import { DeerflowError } from "../../errors.js";
import { BinaryFileError, type LocalSandbox } from "../../sandbox/local-sandbox.js";
import { SandboxServiceError, type Sandbox } from "../../sandbox/sandbox.js";
import { LocalSandboxProvider } from "../../sandbox/local-provider.js";
import { ensureSandbox, type SandboxToolRuntime } from "../../sandbox/provider.js";
import { runContextOf, type RunSandboxProvider } from "../../agents/run-context.js";

/** The parts of a LangChain tool's runtime config the sandbox tools read. */
export interface ToolRuntimeConfig {
  context?: Record<string, unknown> | null;
  configurable?: Record<string, unknown>;
  state?: Record<string, unknown>;
  signal?: AbortSignal;
}

/** Sandbox limits (`sandbox` section of config.yaml). */
export type SandboxLimits = Pick<AppConfig["sandbox"], "allow_host_bash" | "bash_output_max_chars" | "read_file_output_max_chars" | "ls_output_max_chars" | "bash_command_timeout">;

const DEFAULT_SANDBOX_SECTION = { sandbox: SandboxConfigSchema.parse({}) };

/**
 * The app config of the run: `context.app_config` (the worker installs the run's config snapshot there; SDK
 * embedders pass their own), else the `sandbox` schema defaults. The SDK layer never reads config files itself.
 */
export function appConfigOf(config: ToolRuntimeConfig): Pick<AppConfig, "sandbox"> {
  return runContextOf(config).appConfig ?? DEFAULT_SANDBOX_SECTION;
}

/** The `sandbox` limits of the run. */
export function sandboxLimits(config: ToolRuntimeConfig): SandboxLimits {
  return appConfigOf(config).sandbox;
}

/**
 * The run's sandbox provider: `context.sandbox_provider` (the gateway's, set by the run worker), else a local
 * provider over `baseDir` (default `DEER_FLOW_HOME`; stateless apart from its cache, so a fresh one per call is
 * correct).
 */
export function providerOf(config: ToolRuntimeConfig, baseDir?: string): RunSandboxProvider {
  return runContextOf(config).sandboxProvider ?? new LocalSandboxProvider({ baseDir });
}

/** A tool-facing failure: its message becomes the "Error: ..." result as is. */
export class SandboxToolError extends Error {}

/**
 * The sandbox of the thread this tool call belongs to: the provider's `toolSandbox` (a remote sandbox, acquired on
 * first use) where it has one, else its host-directory sandbox. Thread and user come only from the server-set
 * runtime context (`thread_id`, `user_id`; `configurable` as fallback), never from a sandbox id found in state,
 * which a client could have written. With `record` (default) the first call of a run records the sandbox id in the
 * tool's state and context ({@link ensureSandbox}), which SandboxMiddleware turns into the `sandbox` state update.
 * `baseDir` is the runtime home used when the context carries no provider.
 * @throws SandboxToolError when there is no thread id; Error for an unsafe id; SandboxServiceError when a remote
 *   sandbox cannot be had.
 */
export async function threadSandbox(config: ToolRuntimeConfig, options: { record?: boolean; baseDir?: string } = {}): Promise<Sandbox> {
  const { threadId, userId } = runContextOf(config);
  if (!threadId) throw new SandboxToolError("Thread ID is not available in the runtime context; sandbox tools need a thread");
  const provider = providerOf(config, options.baseDir);
  if (options.record ?? true) await ensureSandbox(config as SandboxToolRuntime, provider);
  return provider.toolSandbox ? provider.toolSandbox(threadId, userId) : provider.sandboxFor(threadId, userId);
}

/**
 * The thread's directories on this host (uploads as stored by the gateway, files the gateway itself writes),
 * whatever the provider: for tools that read the gateway's own copy (list_uploaded_files, present_files).
 * @throws SandboxToolError when there is no thread id; Error for an unsafe id.
 */
export async function hostSandbox(config: ToolRuntimeConfig, options: { baseDir?: string } = {}): Promise<LocalSandbox> {
  const { threadId, userId } = runContextOf(config);
  if (!threadId) throw new SandboxToolError("Thread ID is not available in the runtime context; sandbox tools need a thread");
  return providerOf(config, options.baseDir).sandboxFor(threadId, userId);
}

/** Head-truncates `text` to at most `maxChars` characters (0 = no limit), with a note saying how much was kept. */
export function truncateHead(text: string, maxChars: number, hint = ""): string {
  if (maxChars === 0 || text.length <= maxChars) return text;
  const note = (kept: number) => `\n... [truncated: showing first ${kept} of ${text.length} chars${hint}]`;
  const kept = Math.max(0, maxChars - note(maxChars).length);
  return kept === 0 ? text.slice(0, maxChars) : text.slice(0, kept) + note(kept);
}

/** Wording of the "not found" case per tool. */
export interface ErrorWording {
  /** e.g. "File not found" or "Directory not found". */
  notFound: string;
  /** e.g. "reading file"; used for unexpected errors. */
  doing: string;
}

/**
 * The "Error: ..." tool result for a failure: refused paths and tool errors keep their message; file-system
 * codes get DeerFlow's wording; anything else is "Unexpected error <doing>: <message>" with host paths masked.
 */
export function toolErrorText(err: unknown, shownPath: string, wording: ErrorWording, sandbox?: Sandbox | null): string {
  if (DeerflowError.isInstance(err) || err instanceof SandboxToolError || err instanceof SandboxServiceError) return `Error: ${(err as Error).message}`;
  if (err instanceof BinaryFileError) {
    return `Error: cannot read '${shownPath}' as text: it appears to be a binary file (e.g. .xlsx, .pdf or an image). read_file only supports UTF-8 text; use view_image for images.`;
  }
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case "ENOENT":
      return `Error: ${wording.notFound}: ${shownPath}`;
    case "ENOTDIR":
      return `Error: Path is not a directory: ${shownPath}`;
    case "EISDIR":
      return `Error: Path is a directory, not a file: ${shownPath}`;
    case "EACCES":
    case "EPERM":
      return `Error: Permission denied: ${shownPath}`;
    case "ELOOP":
      return `Error: Access denied: ${shownPath} is a symlink`;
    case "ENAMETOOLONG":
      return `Error: Path is too long: ${shownPath.slice(0, 200)}`;
    default: {
      const message = err instanceof Error ? err.message : String(err);
      return `Error: Unexpected error ${wording.doing}: ${sandbox ? sandbox.maskOutput(message) : message}`;
    }
  }
}
