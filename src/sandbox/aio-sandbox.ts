// Port of DeerFlow community/aio_sandbox/aio_sandbox.py (AioSandbox): one thread's sandbox in DeerFlow's container
// sandbox, reached over its HTTP API (shell exec, file read/write/list/find/grep/download).
import path from "node:path";
import { compileLinearRegex, escapeRegexSource } from "../linear-regex.js";
import type { AioHttpClient } from "./aio-client.js";
import type { RunResult } from "./host-bash.js";
import { BinaryFileError, MAX_LIST_ENTRIES, MAX_READ_BYTES } from "./local-sandbox.js";
import { checkPathText, SandboxPathError, VIRTUAL_ROOT } from "./paths.js";
import type { Bounded, ExecuteOptions, GlobOptions, GrepOptions, ReadResult, Sandbox, SandboxGrepMatch } from "./sandbox.js";
import { globMatcher, LINE_SUMMARY_LENGTH, shouldIgnoreName } from "./search.js";

/** Largest file downloaded from the sandbox, in bytes (DeerFlow `_MAX_DOWNLOAD_SIZE`). */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;
/** Seconds added to the command's own limit before the HTTP call of a command is given up. */
const EXEC_GRACE_SECONDS = 10;
const WORKSPACE = `${VIRTUAL_ROOT}/workspace`;

/** One entry of `POST /v1/file/list`. */
interface ListedFile {
  path: string;
  is_directory?: boolean;
}

/** `data` of `POST /v1/shell/exec`: the output and how the command ended. */
interface ExecData {
  output?: string;
  exit_code?: number | null;
  returncode?: number | null;
  status?: string;
}

/** True when any component of a `/`-path is ignored by the searches (DeerFlow `should_ignore_path`). */
const ignoredPath = (p: string) => p.split("/").some((part) => part && shouldIgnoreName(part));
/** `p` relative to `root`, or null when it is not below it. */
function relativeTo(root: string, p: string): string | null {
  const base = root.replace(/\/+$/, "") || "/";
  if (p === base) return "";
  const prefix = base === "/" ? "/" : `${base}/`;
  return p.startsWith(prefix) ? p.slice(prefix.length) : null;
}

/**
 * A thread's sandbox in a running AIO sandbox service. Paths are refused before they are sent unless they are
 * absolute, free of `..` and under `/mnt/user-data` or (reads only) one of `readRoots` (the skills path); commands
 * run in `/mnt/user-data/workspace`. The service is the isolation boundary, so `bash` needs no opt-in
 * ({@link isolated}). Failures of the service are {@link SandboxServiceError}s naming it, never its address.
 */
export class AioSandbox implements Sandbox {
  readonly isolated = true;

  /**
   * @param id Sandbox id (deterministic per user and thread). @param client The service's HTTP client.
   * @param readRoots Extra virtual roots the agent may read (e.g. `/mnt/skills`).
   */
  constructor(
    readonly id: string,
    readonly threadId: string,
    readonly userId: string,
    private readonly client: AioHttpClient,
    private readonly readRoots: readonly string[] = [],
  ) {}

  /**
   * The path as sent to the service, after the checks upstream's `download_file` makes (no `..`, under the
   * allowed prefix), for every operation.
   * @throws SandboxPathError naming the rule.
   */
  remotePath(virtualPath: string, mode: "read" | "write" | "list"): string {
    checkPathText(virtualPath);
    if (!virtualPath.startsWith("/")) throw new SandboxPathError(`Path must be absolute: ${virtualPath}`);
    if (virtualPath.split("/").includes("..")) throw new SandboxPathError(`Access denied: path traversal detected in '${virtualPath}'`);
    const normal = path.posix.normalize(virtualPath).replace(/(.)\/+$/, "$1");
    const under = (root: string) => normal === root || normal.startsWith(`${root}/`);
    if (under(VIRTUAL_ROOT) && (normal !== VIRTUAL_ROOT || mode === "list")) return normal;
    if (mode !== "write" && this.readRoots.some(under)) return normal;
    throw new SandboxPathError(`Access denied: path must be under ${VIRTUAL_ROOT}${mode === "write" ? "" : ` or ${this.readRoots.join(", ")}`}: ${virtualPath}`);
  }

  /** The service runs no host path: nothing to mask. */
  maskOutput(text: string): string {
    return text;
  }

  /**
   * `POST /v1/shell/exec` in the workspace, the command's own limit passed as `no_change_timeout`; the HTTP call
   * waits that long plus a grace. A timeout status from the service is `timedOut`; cancellation is `aborted`.
   * @throws SandboxServiceError when the service fails or does not answer.
   */
  async execute(command: string, options: ExecuteOptions): Promise<RunResult> {
    const body = { command, exec_dir: WORKSPACE, no_change_timeout: options.timeoutSeconds, hard_timeout: options.timeoutSeconds };
    let data: ExecData;
    try {
      data = (await this.client.post<ExecData>("/v1/shell/exec", body, { timeoutMs: (options.timeoutSeconds + EXEC_GRACE_SECONDS) * 1000, signal: options.signal })) ?? {};
    } catch (err) {
      if (options.signal?.aborted) return { output: "", exitCode: null, timedOut: false, aborted: true, droppedBytes: 0 };
      throw err;
    }
    const exitCode = data.exit_code ?? data.returncode ?? null;
    const timedOut = /timeout/i.test(data.status ?? "");
    return { output: data.output ?? "", exitCode: timedOut ? null : (exitCode ?? 0), timedOut, aborted: false, droppedBytes: 0 };
  }

  /** `POST /v1/file/list` (recursive), shown like LocalSandbox's listing: sorted, directories ending in `/`. */
  async listDir(virtualPath: string, maxDepth = 2): Promise<string[]> {
    const root = this.remotePath(virtualPath, "list");
    const data = await this.client.post<{ files?: ListedFile[] }>("/v1/file/list", { path: root, recursive: true, show_hidden: false, max_depth: maxDepth });
    const out: string[] = [];
    for (const entry of data?.files ?? []) {
      const rel = relativeTo(root, entry.path);
      if (!rel || rel.split("/").length > maxDepth || ignoredPath(rel)) continue;
      out.push(entry.is_directory ? `${entry.path}/` : entry.path);
    }
    return out.sort().slice(0, MAX_LIST_ENTRIES);
  }

  /** `POST /v1/file/read`; text over {@link MAX_READ_BYTES} is cut and flagged. @throws BinaryFileError for NUL bytes. */
  async readFile(virtualPath: string): Promise<ReadResult> {
    const data = await this.client.post<{ content?: string }>("/v1/file/read", { file: this.remotePath(virtualPath, "read") });
    const content = data?.content ?? "";
    if (content.includes("\u0000")) throw new BinaryFileError(virtualPath);
    const size = Buffer.byteLength(content);
    if (size <= MAX_READ_BYTES) return { text: content, size, truncated: false };
    return { text: Buffer.from(content).subarray(0, MAX_READ_BYTES).toString("utf8"), size, truncated: true };
  }

  /** `POST /v1/file/write` (UTF-8 text; `append` as the API offers it). */
  async writeFile(virtualPath: string, content: string, append = false): Promise<void> {
    await this.client.post("/v1/file/write", { file: this.remotePath(virtualPath, "write"), content, encoding: "utf-8", append });
  }

  /** Writes bytes (base64 on the wire): uploads and edited artifacts (DeerFlow `update_file`). */
  async updateFile(virtualPath: string, content: Buffer): Promise<void> {
    await this.client.post("/v1/file/write", { file: this.remotePath(virtualPath, "write"), content: content.toString("base64"), encoding: "base64" });
  }

  /** `GET /v1/file/download` up to {@link MAX_DOWNLOAD_BYTES} (DeerFlow `download_file`). @throws ENOENT / EFBIG errors. */
  async downloadFile(virtualPath: string): Promise<Buffer> {
    return this.client.getBytes("/v1/file/download", { path: this.remotePath(virtualPath, "read") }, MAX_DOWNLOAD_BYTES);
  }

  /**
   * Files matching `pattern` under `root` via `POST /v1/file/find`; with `includeDirs`, the recursive listing
   * filtered by the same matcher the local sandbox uses (DeerFlow `AioSandbox.glob`).
   */
  async glob(root: string, pattern: string, options: GlobOptions): Promise<Bounded<string>> {
    const base = this.remotePath(root, "list");
    const match = globMatcher(pattern);
    let candidates: string[];
    if (options.includeDirs) {
      const data = await this.client.post<{ files?: ListedFile[] }>("/v1/file/list", { path: base, recursive: true, show_hidden: false });
      candidates = (data?.files ?? []).map((f) => f.path);
    } else {
      const data = await this.client.post<{ files?: string[] }>("/v1/file/find", { path: base, glob: pattern });
      candidates = data?.files ?? [];
    }
    const matches = candidates.filter((p) => {
      const rel = relativeTo(base, p);
      return rel !== null && rel !== "" && !ignoredPath(rel) && match(rel);
    });
    matches.sort();
    return { matches: matches.slice(0, options.maxResults), truncated: matches.length > options.maxResults };
  }

  /**
   * Matching lines via `POST /v1/file/grep`; the pattern is compiled here first so an invalid (or non-linear) regex
   * is the same "Invalid regex pattern" result as locally (DeerFlow `AioSandbox.grep`).
   * @throws SyntaxError for an invalid pattern.
   */
  async grep(root: string, pattern: string, options: GrepOptions): Promise<Bounded<SandboxGrepMatch>> {
    const base = this.remotePath(root, "read");
    compileLinearRegex(options.literal ? escapeRegexSource(pattern) : pattern, !options.caseSensitive);
    const filter = options.glob ? globMatcher(options.glob) : null;
    const body = { path: base, pattern, case_insensitive: !options.caseSensitive, fixed_strings: options.literal, max_results: Math.max(options.maxResults * 4, options.maxResults + 50), max_file_size: "1M", recursive: true };
    const data = await this.client.post<{ matches?: { file: string; line_number: number; line_content: string }[]; truncated?: boolean }>("/v1/file/grep", body);
    const matches: SandboxGrepMatch[] = [];
    let truncated = Boolean(data?.truncated);
    for (const m of data?.matches ?? []) {
      const rel = m.file === base ? path.posix.basename(m.file) : relativeTo(base, m.file);
      if (rel === null || ignoredPath(rel) || (filter && !filter(rel))) continue;
      if (matches.length >= options.maxResults) {
        truncated = true;
        break;
      }
      matches.push({ path: m.file, lineNumber: m.line_number, line: m.line_content.length > LINE_SUMMARY_LENGTH ? `${m.line_content.slice(0, LINE_SUMMARY_LENGTH)}...` : m.line_content });
    }
    return { matches, truncated };
  }
}
