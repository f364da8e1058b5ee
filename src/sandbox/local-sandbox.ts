// Port of DeerFlow sandbox/local/local_sandbox.py (LocalSandbox) and local/list_dir.py: one thread's directories on
// the host, addressed through `/mnt/user-data/...` virtual paths, every access checked against the real root.
import { randomUUID } from "node:crypto";
import { constants, realpathSync } from "node:fs";
import { lstat, open, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { bubblewrapStatus } from "./bubblewrap.js";
import { runHostCommand, toHostCommand, type RunResult } from "./host-bash.js";
import { findMount, mountVirtualPath, readOnlyMountError, type SandboxMount } from "./mounts.js";
import { checkPathText, parseVirtualPath, resolveExisting, resolveForWrite, toHostPath, toVirtualPath, VIRTUAL_ROOT, type SandboxDirs } from "./paths.js";
import { compareCodePoints } from "../code-point-order.js";

/** Largest file `readFile` loads, in bytes; longer files are read up to this size and flagged. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;
/** Entries `listDir` returns at most (the tool truncates the text further). */
export const MAX_LIST_ENTRIES = 2000;
/** Directory names `listDir` does not descend into or show (DeerFlow list_dir ignore list, shortened). */
const IGNORED = new Set([".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"]);
/** Temporary files of in-flight writes and uploads. */
export const TEMP_FILE = /^\.(upload|write)-.*\.part$/;

/** Text read from a file: `truncated` when the file was longer than {@link MAX_READ_BYTES}. */
export interface ReadResult {
  text: string;
  size: number;
  truncated: boolean;
}

/** Options of {@link LocalSandbox.execute}. */
export interface ExecuteOptions {
  /** Wall-clock limit in seconds (config `sandbox.bash_command_timeout`). */
  timeoutSeconds: number;
  signal?: AbortSignal;
}

/** Thrown when a file is not UTF-8 text (or holds NUL bytes). */
export class BinaryFileError extends Error {}

/**
 * One thread's sandbox on the local file system. Paths are virtual (`/mnt/user-data/{workspace,uploads,outputs}/..`);
 * each access is validated ({@link parseVirtualPath}) and resolved with realpath so that symlinks cannot lead outside
 * the thread's `user-data` directory. Mirrors DeerFlow `LocalSandbox` with per-thread path mappings.
 */
export class LocalSandbox {
  /** Real (symlink-free) path of `dirs.root`, the boundary every access is checked against. */
  readonly realRoot: string;

  /**
   * @param id Sandbox id (`local:<user>:<thread>`). @param dirs Host directories; they must exist.
   * @param mounts Validated extra mounts (skills, `sandbox.mounts`; see `resolveMounts`).
   * @throws Error when `dirs.root` does not exist.
   */
  constructor(
    readonly id: string,
    readonly threadId: string,
    readonly userId: string,
    readonly dirs: SandboxDirs,
    readonly mounts: readonly SandboxMount[] = [],
  ) {
    this.realRoot = realpathSync(dirs.root);
  }

  /**
   * Host path for a virtual path. `read` and `list` need an existing target; `write` creates missing parent
   * directories. `list` also accepts `/mnt/user-data` itself.
   * @throws SandboxPathError when the path is refused; ENOENT errors for missing targets (read/list).
   */
  async resolve(virtualPath: string, mode: "read" | "write" | "list"): Promise<string> {
    if (this.mounts.length && typeof virtualPath === "string" && !virtualPath.startsWith(`${VIRTUAL_ROOT}/`) && virtualPath !== VIRTUAL_ROOT) {
      checkPathText(virtualPath);
      const hit = virtualPath.startsWith("/") ? findMount(this.mounts, virtualPath) : null;
      if (hit) {
        if (mode === "write" && hit.mount.readOnly) throw readOnlyMountError(virtualPath);
        // Each mount is its own confinement root: symlinks inside it may not lead out of it.
        const host = path.join(hit.mount.host, ...hit.segments);
        return mode === "write" ? resolveForWrite(host, hit.mount.host, virtualPath) : resolveExisting(host, hit.mount.host, virtualPath);
      }
    }
    const parsed = parseVirtualPath(virtualPath, { allowRoot: mode === "list" });
    const host = toHostPath(this.dirs, parsed);
    return mode === "write" ? resolveForWrite(host, this.realRoot, virtualPath) : resolveExisting(host, this.realRoot, virtualPath);
  }

  /** Virtual path of a host path inside the sandbox. */
  toVirtual(hostPath: string): string {
    return mountVirtualPath(this.mounts, hostPath) ?? toVirtualPath(this.realRoot, hostPath);
  }

  /** Replaces the host location of the thread's directories in tool output with `/mnt/user-data`. */
  maskOutput(text: string): string {
    let out = text;
    for (const root of new Set([this.realRoot, this.dirs.root])) out = out.split(root).join(VIRTUAL_ROOT);
    for (const m of this.mounts) out = out.split(m.host).join(m.virtual);
    return out;
  }

  /**
   * Lists a directory up to `maxDepth` levels (DeerFlow: 2) as virtual paths, directories with a trailing `/`,
   * symlinks shown but not followed, temporary and ignored entries skipped, at most {@link MAX_LIST_ENTRIES}.
   * @throws SandboxPathError; ENOENT / ENOTDIR errors.
   */
  async listDir(virtualPath: string, maxDepth = 2): Promise<string[]> {
    const start = await this.resolve(virtualPath, "list");
    if (!(await stat(start)).isDirectory()) throw Object.assign(new Error(`Not a directory: ${virtualPath}`), { code: "ENOTDIR" });
    const out: string[] = [];
    const walk = async (dir: string, depth: number): Promise<void> => {
      const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => compareCodePoints(a.name, b.name));
      for (const entry of entries) {
        if (out.length >= MAX_LIST_ENTRIES) return;
        if (IGNORED.has(entry.name) || TEMP_FILE.test(entry.name)) continue;
        const full = path.join(dir, entry.name);
        if (entry.isSymbolicLink()) out.push(`${this.toVirtual(full)} (symlink)`);
        else if (entry.isDirectory()) {
          out.push(`${this.toVirtual(full)}/`);
          if (depth < maxDepth) await walk(full, depth + 1);
        } else out.push(this.toVirtual(full));
      }
    };
    await walk(start, 1);
    return out;
  }

  /**
   * Reads a UTF-8 text file (at most {@link MAX_READ_BYTES}; `truncated` tells when there was more).
   * @throws SandboxPathError; BinaryFileError for non-text content; EISDIR / ENOENT errors.
   */
  async readFile(virtualPath: string): Promise<ReadResult> {
    const real = await this.resolve(virtualPath, "read");
    const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw Object.assign(new Error(`Is a directory: ${virtualPath}`), { code: "EISDIR" });
      const length = Math.min(info.size, MAX_READ_BYTES);
      const buf = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buf, 0, length, 0);
      const bytes = buf.subarray(0, bytesRead);
      if (bytes.includes(0)) throw new BinaryFileError(virtualPath);
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: info.size > length });
      } catch {
        throw new BinaryFileError(virtualPath);
      }
      return { text, size: info.size, truncated: info.size > length };
    } finally {
      await handle.close();
    }
  }

  /**
   * Writes text to a file, creating parent directories. Overwrites are atomic (temp file in the same directory,
   * then rename); `append` adds to the end (the real target is opened with O_NOFOLLOW).
   * @throws SandboxPathError; EISDIR when the target is a directory.
   */
  async writeFile(virtualPath: string, content: string, append = false): Promise<void> {
    const target = await this.resolve(virtualPath, "write");
    const existing = await lstat(target).catch(() => null);
    if (existing?.isDirectory()) throw Object.assign(new Error(`Is a directory: ${virtualPath}`), { code: "EISDIR" });
    if (append) {
      const handle = await open(target, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
      try {
        await handle.writeFile(content, "utf8");
      } finally {
        await handle.close();
      }
      return;
    }
    await writeAtomic(target, content);
  }

  /**
   * Runs a host bash command in the workspace. Where bubblewrap works ({@link bubblewrapStatus}) the command runs
   * inside it with the thread's `user-data` mounted at `/mnt/user-data` and nothing else writable, no network and an
   * empty environment. Otherwise it runs on the host with `/mnt/user-data` rewritten to the host directory and a
   * minimal environment (`HOME` = workspace): no isolation beyond the path checks. Output is masked back to
   * virtual paths by the caller.
   */
  async execute(command: string, options: ExecuteOptions): Promise<RunResult> {
    const cwd = await this.resolve(`${VIRTUAL_ROOT}/workspace`, "read");
    const isolation = bubblewrapStatus();
    if (isolation.available) {
      return runHostCommand(command, { cwd, timeoutSeconds: options.timeoutSeconds, signal: options.signal, env: {}, bubblewrap: { bwrap: isolation.path!, root: this.realRoot } });
    }
    return runHostCommand(toHostCommand(command, this.realRoot), {
      cwd,
      timeoutSeconds: options.timeoutSeconds,
      signal: options.signal,
      env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME: cwd, LANG: "C.UTF-8", TERM: "dumb" },
    });
  }
}

/**
 * Writes `data` to `target` atomically: a temporary `.write-<uuid>.part` file in the same directory (created
 * exclusively, mode 0644) is renamed over the target, so readers see the old or the new content, never a mix.
 */
export async function writeAtomic(target: string, data: string | Buffer): Promise<void> {
  const temp = path.join(path.dirname(target), `.write-${randomUUID()}.part`);
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
