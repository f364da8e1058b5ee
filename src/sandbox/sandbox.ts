// Port of DeerFlow sandbox/sandbox.py (the abstract Sandbox): what the sandbox tools, uploads and artifacts need
// from a thread's sandbox, whether its files live on this host (LocalSandbox) or behind a service (AioSandbox).
import type { RunResult } from "./host-bash.js";

/** Text read from a file: `truncated` when the file was longer than the sandbox reads at once. `size` in bytes. */
export interface ReadResult {
  text: string;
  size: number;
  truncated: boolean;
}

/** Options of {@link Sandbox.execute}. */
export interface ExecuteOptions {
  /** Wall-clock limit in seconds (config `sandbox.bash_command_timeout`). */
  timeoutSeconds: number;
  signal?: AbortSignal;
  /** The run the command belongs to (the bubblewrap provider's audit line). */
  runId?: string;
}

/** Options of {@link Sandbox.glob}; `maxResults` already clamped by the tool. */
export interface GlobOptions {
  includeDirs: boolean;
  maxResults: number;
}

/** Options of {@link Sandbox.grep}; `glob` filters candidate files by their path relative to the root. */
export interface GrepOptions {
  glob?: string | null;
  literal: boolean;
  caseSensitive: boolean;
  maxResults: number;
}

/** One grep hit: the file's virtual path, its 1-based line number and the (shortened) line. */
export interface SandboxGrepMatch {
  path: string;
  lineNumber: number;
  line: string;
}

/** A bounded result list: `truncated` when more matched than was returned. */
export interface Bounded<T> {
  matches: T[];
  truncated: boolean;
}

/**
 * One thread's sandbox as the tools see it (DeerFlow `Sandbox`). Every path is virtual (`/mnt/user-data/...`,
 * `/mnt/skills/...` or a configured mount) and every result speaks virtual paths. Failures are thrown: file-system
 * codes (`ENOENT`, `ENOTDIR`, `EISDIR`, ...) as errors with that `code`, refused paths as `SandboxPathError`, a
 * sandbox service that fails as `SandboxServiceError`; the tools turn them into "Error: ..." results.
 */
export interface Sandbox {
  /** Sandbox id as recorded in the thread state (`state.sandbox.sandbox_id`). */
  readonly id: string;
  readonly threadId: string;
  readonly userId: string;
  /**
   * True when commands run in a boundary of their own (a container), so `bash` is offered without
   * `sandbox.allow_host_bash` (DeerFlow `is_host_bash_allowed` for a non-local provider).
   */
  readonly isolated: boolean;
  /** Runs a bash command in `/mnt/user-data/workspace`; stdout and stderr together in `output`. */
  execute(command: string, options: ExecuteOptions): Promise<RunResult>;
  /** Lists a directory up to `maxDepth` levels, directories ending in `/` (DeerFlow `list_dir`). */
  listDir(virtualPath: string, maxDepth?: number): Promise<string[]>;
  /** Reads a UTF-8 text file. @throws BinaryFileError for non-text content. */
  readFile(virtualPath: string): Promise<ReadResult>;
  /** Writes text (parents created), replacing the file or adding to its end. */
  writeFile(virtualPath: string, content: string, append?: boolean): Promise<void>;
  /** Paths under `root` matching a glob (relative to `root`), as virtual paths. */
  glob(root: string, pattern: string, options: GlobOptions): Promise<Bounded<string>>;
  /** Lines matching a regex (RE2 syntax) or literal in `root` (a file or a directory tree). */
  grep(root: string, pattern: string, options: GrepOptions): Promise<Bounded<SandboxGrepMatch>>;
  /** Replaces host or service locations in text shown to the model with virtual paths. */
  maskOutput(text: string): string;
}

/** The sandbox service (DeerFlow's container sandbox) failed: down, too slow, or an error answer. */
export class SandboxServiceError extends Error {
  /** @param kind What went wrong, for the tool result and the metrics-free log line. */
  constructor(
    message: string,
    readonly kind: "unreachable" | "timeout" | "http" | "refused" = "http",
  ) {
    super(message);
    this.name = "SandboxServiceError";
  }
}
