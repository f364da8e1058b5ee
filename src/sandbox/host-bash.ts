// Port of DeerFlow sandbox/local/local_sandbox.py (execute_command) and the command checks of sandbox/tools.py
// (validate_local_bash_command_paths, _truncate_bash_output) for host bash. The checks below stop accidents and
// casual escapes only; the boundary is bubblewrap (src/sandbox/bubblewrap.ts) where it works. Without it host bash
// is not isolated at all, which is why it is off unless `sandbox.allow_host_bash`.
import { spawn } from "node:child_process";
import { bubblewrapArgs } from "./bubblewrap.js";
import { SandboxPathError, VIRTUAL_ROOT } from "./paths.js";

/** Longest command accepted, in characters. */
export const MAX_COMMAND_CHARS = 64 * 1024;
/** Output kept in memory per stream end (head and tail), in bytes; the tool truncates further to its limit. */
const CAPTURE_BYTES = 256 * 1024;
/** Absolute host paths a command may name besides `/mnt/user-data`: system binaries and harmless devices. */
const SYSTEM_PREFIXES = ["/bin/", "/usr/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/", "/dev/fd/"];
const SYSTEM_FILES = new Set(["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/random", "/dev/urandom", "/usr/bin/env"]);
const DOTDOT = /(?:^|[\s/=:'"`(;|&<>{,])\.\.(?=$|[\s/'"`);|&<>},])/;
// An absolute path starts with `/` not glued to a word, `.`, `:` (URLs), `$`/`}` (variables) or another `/`.
const ABSOLUTE = /(?<![\w.:~$}\-\]/%])\/[^\s"'`;&|<>()]*/g;
const TILDE_USER = /(?:^|[\s=:'"`(;|&<>])~[A-Za-z_]/;

function decodePercent(text: string): string {
  return text.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

function checkOne(command: string, encoded: boolean): void {
  const how = encoded ? " (percent-encoded)" : "";
  if (DOTDOT.test(command)) throw new SandboxPathError(`Path traversal ('..')${how} is not allowed in bash commands; use absolute paths under ${VIRTUAL_ROOT}`);
  if (/\bfile:\/\//i.test(command)) throw new SandboxPathError("file:// URLs are not allowed in bash commands");
  if (TILDE_USER.test(command)) throw new SandboxPathError("Other users' home directories (~user) are not allowed in bash commands");
  for (const match of command.matchAll(ABSOLUTE)) {
    const p = match[0];
    if (p === VIRTUAL_ROOT || p.startsWith(`${VIRTUAL_ROOT}/`)) continue;
    if (SYSTEM_FILES.has(p) || SYSTEM_PREFIXES.some((prefix) => p.startsWith(prefix) && p.length > prefix.length)) continue;
    throw new SandboxPathError(`Host path${how} '${p}' is not allowed in bash commands; only ${VIRTUAL_ROOT}/... and system binaries may be named`);
  }
}

/**
 * Refuses commands that name paths outside the thread: `..` components, absolute host paths other than
 * `/mnt/user-data/...` and system binaries, `file://` URLs, `~user`, NUL bytes, over-long commands; the same
 * checks run again on the percent-decoded text, so `%2e%2e%2f` is refused too. Best effort, not isolation.
 * @throws SandboxPathError naming the offending part.
 */
export function validateBashCommand(command: string): void {
  if (!command.trim()) throw new SandboxPathError("Command is empty");
  if (command.length > MAX_COMMAND_CHARS) throw new SandboxPathError(`Command is too long (${command.length} characters; the limit is ${MAX_COMMAND_CHARS})`);
  if (command.includes("\u0000")) throw new SandboxPathError("Command contains a NUL byte");
  checkOne(command, false);
  const decoded = decodePercent(command);
  if (decoded !== command) checkOne(decoded, true);
}

/** Replaces `/mnt/user-data` in a command with the thread's host directory. */
export function toHostCommand(command: string, hostRoot: string): string {
  return command.replace(/\/mnt\/user-data(?=$|[/\s"'`;|&<>)])/g, hostRoot);
}

/** Middle-truncates `output` to at most `maxChars` characters (0 = no limit), keeping head and tail (DeerFlow). */
export function truncateMiddle(output: string, maxChars: number): string {
  if (maxChars === 0 || output.length <= maxChars) return output;
  const markerMax = `\n... [middle truncated: ${output.length} chars skipped] ...\n`.length;
  const kept = Math.max(0, maxChars - markerMax);
  if (kept === 0) return output.slice(0, maxChars);
  const head = Math.floor(kept / 2);
  const tail = kept - head;
  return `${output.slice(0, head)}\n... [middle truncated: ${output.length - kept} chars skipped] ...\n${output.slice(-tail)}`;
}

/** Options of {@link runHostCommand}. */
export interface RunOptions {
  /** Working directory (the thread's workspace). */
  cwd: string;
  /** Wall-clock limit in seconds; the whole process group is killed when it passes. */
  timeoutSeconds: number;
  /** Environment of the shell (never the gateway's own: it holds API keys). */
  env: Record<string, string>;
  /** Aborts the command (the run was cancelled): the process group is killed. */
  signal?: AbortSignal;
  /**
   * Run inside bubblewrap: `bwrap` is the binary, `root` the thread's real `user-data` directory mounted at
   * `/mnt/user-data` (the command keeps its virtual paths; `cwd` and `env` are then unused).
   */
  bubblewrap?: { bwrap: string; root: string };
}

/** What a command produced: interleaved stdout+stderr (head and tail kept when huge), exit status. */
export interface RunResult {
  output: string;
  exitCode: number | null;
  timedOut: boolean;
  aborted: boolean;
  /** Bytes dropped from the middle because the output exceeded the capture buffer. */
  droppedBytes: number;
}

/** Keeps the first and last {@link CAPTURE_BYTES} of a stream; `dropped` counts the bytes left out between them. */
export class HeadTail {
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  dropped = 0;
  push(chunk: Buffer): void {
    if (this.headLen < CAPTURE_BYTES) {
      const take = chunk.subarray(0, CAPTURE_BYTES - this.headLen);
      this.head.push(take);
      this.headLen += take.length;
      chunk = chunk.subarray(take.length);
    }
    if (!chunk.length) return;
    this.tail.push(chunk);
    this.tailLen += chunk.length;
    while (this.tailLen - this.tail[0].length >= CAPTURE_BYTES) {
      this.dropped += this.tail[0].length;
      this.tailLen -= this.tail.shift()!.length;
    }
  }
  text(): string {
    const head = Buffer.concat(this.head).toString("utf8");
    if (!this.tail.length) return head;
    const gap = this.dropped ? `\n... [${this.dropped} bytes of output dropped] ...\n` : "";
    return head + gap + Buffer.concat(this.tail).toString("utf8");
  }
}

/** SIGKILLs the process group led by `pid` (nothing when it is already gone). */
export function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * Runs `command` with `/bin/bash -c` (inside bubblewrap when `options.bubblewrap` is set) in its own process group, capturing stdout and stderr together. On timeout
 * or abort the whole group is killed with SIGKILL. When the shell exits, output still buffered is collected for a
 * short grace period; background jobs that keep the pipes open are left running but no longer read.
 */
export function runHostCommand(command: string, options: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    const capture = new HeadTail();
    const child = options.bubblewrap
      ? // bwrap starts with an empty environment: a shell reading /proc/$PPID/environ finds nothing of the gateway's.
        spawn(options.bubblewrap.bwrap, bubblewrapArgs(options.bubblewrap.root, command), { cwd: "/", env: {}, detached: true, stdio: ["ignore", "pipe", "pipe"] })
      : spawn("/bin/bash", ["-c", command], { cwd: options.cwd, env: options.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let timedOut = false;
    let aborted = false;
    let settled = false;
    child.stdout.on("data", (c: Buffer) => capture.push(c));
    child.stderr.on("data", (c: Buffer) => capture.push(c));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, Math.max(1, options.timeoutSeconds * 1000));
    const onAbort = () => {
      aborted = true;
      killGroup(child.pid);
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ output: capture.text(), exitCode, timedOut, aborted, droppedBytes: capture.dropped });
    };
    child.on("error", (err) => {
      capture.push(Buffer.from(`${err.message}\n`));
      finish(null);
    });
    child.on("close", (code) => finish(code));
    // `close` waits for the pipes, which a background job may hold open; don't wait for it longer than 200 ms.
    child.on("exit", (code) => setTimeout(() => finish(code), 200).unref());
    if (options.signal?.aborted) onAbort();
  });
}
