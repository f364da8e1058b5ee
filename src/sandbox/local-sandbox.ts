// Port of DeerFlow sandbox/local/local_sandbox.py (LocalSandbox) and local/list_dir.py: one thread's directories on
// the host, addressed through `/mnt/user-data/...` virtual paths, every access checked against the real root.
import { randomUUID } from "node:crypto";
import { constants, realpathSync } from "node:fs";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { bubblewrapStatus } from "./bubblewrap.js";
import { runHostCommand, toHostCommand, type RunResult } from "./host-bash.js";
import { findMount, mountVirtualPath, readOnlyMountError, type SandboxMount } from "./mounts.js";
import { checkPathText, parseVirtualPath, resolveExisting, resolveForWrite, SandboxPathError, toHostPath, toVirtualPath, VIRTUAL_ROOT, type SandboxDirs } from "./paths.js";
import { lstatBeneath, openBeneath, symlinkRefused, openDirBeneath, openTrustedDir, readdirBeneath, withHandle, writeAtomicBeneath } from "./safe-fs.js";
import { compareCodePoints } from "../code-point-order.js";
import { findGlobMatches, findGrepMatches, type SearchRoot } from "./search.js";
import type { Bounded, ExecuteOptions, GlobOptions, GrepOptions, ReadResult, Sandbox, SandboxGrepMatch } from "./sandbox.js";

/** Largest file `readFile` loads, in bytes; longer files are read up to this size and flagged. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;
/** Entries `listDir` returns at most (the tool truncates the text further). */
export const MAX_LIST_ENTRIES = 2000;
/** Directory names `listDir` does not descend into or show (DeerFlow list_dir ignore list, shortened). */
const IGNORED = new Set([".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"]);
/** Temporary files of in-flight writes and uploads. */
export const TEMP_FILE = /^\.(upload|write)-.*\.part$/;

export type { ExecuteOptions, ReadResult } from "./sandbox.js";

/** Thrown when a file is not UTF-8 text (or holds NUL bytes). */
export class BinaryFileError extends Error {}

/**
 * One thread's sandbox on the local file system. Paths are virtual (`/mnt/user-data/{workspace,uploads,outputs}/..`);
 * each access is validated ({@link parseVirtualPath}) and resolved with realpath so that symlinks cannot lead outside
 * the thread's `user-data` directory. Mirrors DeerFlow `LocalSandbox` with per-thread path mappings.
 */
export class LocalSandbox implements Sandbox {
  /** Host bash is no boundary: `bash` stays behind `sandbox.allow_host_bash`. */
  readonly isolated: boolean = false;
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

  /**
   * Where a virtual path lives: the trusted host directory it is below (the thread's real `user-data`, or a
   * mount's host directory) and the components under it. Nothing is touched.
   * @throws SandboxPathError for a refused path or a write under a read-only mount.
   */
  locate(virtualPath: string, mode: "read" | "write" | "list"): { root: string; segments: string[]; hostPath: string } {
    if (this.mounts.length && typeof virtualPath === "string" && !virtualPath.startsWith(`${VIRTUAL_ROOT}/`) && virtualPath !== VIRTUAL_ROOT) {
      checkPathText(virtualPath);
      const hit = virtualPath.startsWith("/") ? findMount(this.mounts, virtualPath) : null;
      if (hit) {
        if (mode === "write" && hit.mount.readOnly) throw readOnlyMountError(virtualPath);
        return { root: hit.mount.host, segments: hit.segments, hostPath: path.join(hit.mount.host, ...hit.segments) };
      }
    }
    const parsed = parseVirtualPath(virtualPath, { allowRoot: mode === "list" });
    const segments = parsed.area === null ? [] : [parsed.area, ...parsed.segments];
    return { root: this.realRoot, segments, hostPath: path.join(this.realRoot, ...segments) };
  }

  /**
   * Opens a directory of the sandbox by virtual path without following symlinks in any component (see
   * safe-fs.ts): what is opened is what the path names now, and stays so while the handle is held. The caller
   * closes it. `create` makes missing directories (write mode).
   * @throws SandboxPathError (403) for a refused path or a symlink; ENOENT / ENOTDIR errors.
   */
  async openDir(virtualPath: string, mode: "read" | "write" | "list", create = false): Promise<FileHandle> {
    const { root, segments } = this.locate(virtualPath, mode);
    return withHandle(await openTrustedDir(root), (r) => openDirBeneath(r, segments, { create, shown: virtualPath }));
  }

  /**
   * Opens the parent directory of a virtual file path (see {@link openDir}) and returns it with the file's name.
   * @throws SandboxPathError when the path names a root (no file name) or passes through a symlink.
   */
  async openParent(virtualPath: string, mode: "read" | "write", create = false): Promise<{ dir: FileHandle; name: string }> {
    const { root, segments } = this.locate(virtualPath, mode);
    if (segments.length === 0) throw new SandboxPathError(`Path must name a file: ${virtualPath}`);
    const dir = await withHandle(await openTrustedDir(root), (r) => openDirBeneath(r, segments.slice(0, -1), { create, shown: virtualPath }));
    return { dir, name: segments.at(-1)! };
  }

  /**
   * Opens an existing regular file for reading, symlinks refused in every component, FIFOs and devices never
   * blocking the open. The caller closes the handle.
   * @throws SandboxPathError; EISDIR for a directory; ENOENT; EINVAL ("not a regular file") for anything else.
   */
  async openFile(virtualPath: string): Promise<FileHandle> {
    const { dir, name } = await this.openParent(virtualPath, "read");
    const handle = await withHandle(dir, (d) => openBeneath(d, name, undefined, undefined, virtualPath));
    const info = await handle.stat();
    if (info.isFile()) return handle;
    await handle.close();
    if (info.isDirectory()) throw Object.assign(new Error(`Is a directory: ${virtualPath}`), { code: "EISDIR" });
    throw Object.assign(new Error(`Not a regular file: ${virtualPath}`), { code: "EINVAL" });
  }

  /**
   * Opens where a glob/grep search starts: the directory at `virtualPath`, or (for grep) the regular file there,
   * symlinks refused in every component (see {@link openDir}). The caller closes `handle`.
   * @throws SandboxPathError; ENOENT when missing.
   */
  async openSearchRoot(virtualPath: string): Promise<SearchRoot> {
    const hostPath = this.locate(virtualPath, "list").hostPath;
    try {
      return { kind: "dir", handle: await this.openDir(virtualPath, "list"), hostPath };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOTDIR") throw err;
    }
    return { kind: "file", handle: await this.openFile(virtualPath), hostPath };
  }

  /**
   * Paths under `root` (a directory) matching `pattern`, as virtual paths; symlinks are not followed.
   * @throws SandboxPathError; ENOENT when missing.
   */
  async glob(root: string, pattern: string, options: GlobOptions): Promise<Bounded<string>> {
    const start = await this.openSearchRoot(root);
    const { matches, truncated } = await withHandle(start.handle, () => findGlobMatches(start, pattern, options));
    return { matches: matches.map((m) => this.toVirtual(m)), truncated };
  }

  /**
   * Lines matching `pattern` in the file at `root` or the text files under it (see `findGrepMatches`).
   * @throws SyntaxError for a regex RE2 cannot run; SandboxPathError; ENOENT when missing.
   */
  async grep(root: string, pattern: string, options: GrepOptions): Promise<Bounded<SandboxGrepMatch>> {
    const start = await this.openSearchRoot(root);
    const { matches, truncated } = await withHandle(start.handle, () => findGrepMatches(start, pattern, { ...options, glob: options.glob ?? undefined }));
    return { matches: matches.map((m) => ({ path: this.toVirtual(m.path), lineNumber: m.lineNumber, line: m.line })), truncated };
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
    const start = await this.openDir(virtualPath, "list").catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOTDIR") throw Object.assign(new Error(`Not a directory: ${virtualPath}`), { code: "ENOTDIR" });
      throw err;
    });
    const out: string[] = [];
    // Each level is read through the handle of its own directory, opened without following symlinks.
    const walk = async (dir: FileHandle, host: string, depth: number): Promise<void> => {
      const entries = (await readdirBeneath(dir)).sort((a, b) => compareCodePoints(a.name, b.name));
      for (const entry of entries) {
        if (out.length >= MAX_LIST_ENTRIES) return;
        if (IGNORED.has(entry.name) || TEMP_FILE.test(entry.name)) continue;
        const full = path.join(host, entry.name);
        if (entry.isSymbolicLink()) out.push(`${this.toVirtual(full)} (symlink)`);
        else if (entry.isDirectory()) {
          out.push(`${this.toVirtual(full)}/`);
          if (depth >= maxDepth) continue;
          const sub = await openDirBeneath(dir, [entry.name]).catch(() => null);
          if (sub) await withHandle(sub, (h) => walk(h, full, depth + 1));
        } else out.push(this.toVirtual(full));
      }
    };
    await withHandle(start, (h) => walk(h, this.locate(virtualPath, "list").hostPath, 1));
    return out;
  }

  /**
   * Reads a UTF-8 text file (at most {@link MAX_READ_BYTES}; `truncated` tells when there was more).
   * @throws SandboxPathError; BinaryFileError for non-text content; EISDIR / ENOENT errors.
   */
  async readFile(virtualPath: string): Promise<ReadResult> {
    const handle = await this.openFile(virtualPath);
    try {
      const info = await handle.stat();
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
    const { dir, name } = await this.openParent(virtualPath, "write", true);
    await withHandle(dir, async (d) => {
      const existing = await lstatBeneath(d, name);
      if (existing?.isDirectory()) throw Object.assign(new Error(`Is a directory: ${virtualPath}`), { code: "EISDIR" });
      // Replacing a symlink would be harmless, but the agent meant its target: say that it is not followed.
      if (existing?.isSymbolicLink()) throw symlinkRefused(virtualPath);
      if (!append) return writeAtomicBeneath(d, name, content);
      const handle = await openBeneath(d, name, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o644, virtualPath);
      await withHandle(handle, async (h) => {
        if (!(await h.stat()).isFile()) throw Object.assign(new Error(`Not a regular file: ${virtualPath}`), { code: "EINVAL" });
        await h.writeFile(content, "utf8");
      });
    });
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
