// File operations on directories that sandboxed code can write, safe against concurrent renames and symlinks.
// Node has no openat(): every step goes through `/proc/self/fd/<dirfd>/<name>`, which the kernel resolves
// relative to the directory the held descriptor points at (the magic link is followed, never the name again),
// and each component is opened with O_NOFOLLOW, so a symlink anywhere below the trusted root is refused. A
// directory swapped for a symlink between a check and a use therefore cannot lead the gateway elsewhere.
import { randomUUID } from "node:crypto";
import { closeSync, constants, openSync, type Dirent, type Stats } from "node:fs";
import { link, lstat, mkdir, open, readdir, rename, unlink, type FileHandle } from "node:fs/promises";
import { SandboxPathError } from "./paths.js";

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Read flags for files: O_NONBLOCK so that a FIFO planted by sandboxed code cannot hang the gateway's open. */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** The kernel path of entry `name` of the held directory `dir` (or of `dir` itself): resolved through the fd. */
export function fdPath(dir: FileHandle, name?: string): string {
  if (name !== undefined && (!name || name === "." || name === ".." || name.includes("/") || name.includes("\0"))) {
    throw new SandboxPathError(`Invalid path component: ${JSON.stringify(name)}`);
  }
  return name === undefined ? `/proc/self/fd/${dir.fd}` : `/proc/self/fd/${dir.fd}/${name}`;
}

/** The error for a symlink met on the way: symlinks are never followed, whatever they point at. */
export function symlinkRefused(shown: string): SandboxPathError {
  return new SandboxPathError(`Access denied: ${shown} passes through a symlink, which could lead outside the thread's directories; symlinks are not followed`);
}

/** Maps the error of a refused symlink (ELOOP from O_NOFOLLOW) to 403; anything else is rethrown. */
function refuseLink(err: unknown, shown: string): never {
  if ((err as NodeJS.ErrnoException).code === "ELOOP") throw symlinkRefused(shown);
  throw err;
}

/** Opens directory entry `name` of `dir`; a symlink there (ENOTDIR with O_DIRECTORY|O_NOFOLLOW) is refused. */
async function openSubdir(dir: FileHandle, name: string, shown: string): Promise<FileHandle> {
  try {
    return await open(fdPath(dir, name), DIR_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOTDIR" && (await lstatBeneath(dir, name))?.isSymbolicLink()) throw symlinkRefused(shown);
    return refuseLink(err, shown);
  }
}

/**
 * Opens a directory the gateway owns (the thread's `user-data`, a mount's host directory) by its host path. Only
 * its last component is refused as a symlink: the path above it is the gateway's own and sandboxed code cannot
 * change it. The caller closes the handle.
 */
export async function openTrustedDir(hostPath: string): Promise<FileHandle> {
  try {
    return await open(hostPath, DIR_FLAGS);
  } catch (err) {
    return refuseLink(err, "the sandbox root");
  }
}

/**
 * Opens the directory `segments` below the held directory `root`, one component at a time with
 * O_DIRECTORY|O_NOFOLLOW relative to the previous one. With `create`, missing components are created (mode 0755).
 * The caller closes the returned handle (a new one even for no segments); `root` stays open.
 * @throws SandboxPathError (403) when a component is a symlink; ENOENT / ENOTDIR errors otherwise.
 */
export async function openDirBeneath(root: FileHandle, segments: readonly string[], options: { create?: boolean; shown?: string } = {}): Promise<FileHandle> {
  const shown = options.shown ?? segments.join("/");
  // Re-opening the held directory itself follows its magic link on purpose (O_NOFOLLOW would refuse it).
  let current = await open(fdPath(root), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const segment of segments) {
      let next: FileHandle;
      try {
        next = await openSubdir(current, segment, shown);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT" || !options.create) throw err;
        await mkdir(fdPath(current, segment), 0o755).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== "EEXIST") throw e;
        });
        next = await openSubdir(current, segment, shown);
      }
      await current.close();
      current = next;
    }
    return current;
  } catch (err) {
    await current.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Opens entry `name` of the held directory with O_NOFOLLOW (plus `flags`; reads use {@link READ_FLAGS}); `shown`
 * names it in errors.
 * @throws SandboxPathError (403) for a symlink; the file system's errors otherwise.
 */
export async function openBeneath(dir: FileHandle, name: string, flags: number = READ_FLAGS, mode = 0o644, shown = name): Promise<FileHandle> {
  try {
    return await open(fdPath(dir, name), flags | constants.O_NOFOLLOW, mode);
  } catch (err) {
    return refuseLink(err, shown);
  }
}

/** lstat of entry `name` of the held directory, or null when it does not exist. */
export async function lstatBeneath(dir: FileHandle, name: string): Promise<Stats | null> {
  try {
    return await lstat(fdPath(dir, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Entries of the held directory (names only resolved through the fd). */
export function readdirBeneath(dir: FileHandle): Promise<Dirent[]> {
  return readdir(fdPath(dir), { withFileTypes: true });
}

/** Renames `from` to `to`, both entries of the held directory (replacing `to` as rename(2) does). */
export function renameBeneath(dir: FileHandle, from: string, to: string): Promise<void> {
  return rename(fdPath(dir, from), fdPath(dir, to));
}

/** Removes entry `name` (a file or symlink, never followed) of the held directory; missing is fine. */
export async function unlinkBeneath(dir: FileHandle, name: string): Promise<void> {
  await unlink(fdPath(dir, name)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
}

/** Temporary files of in-flight writes: `.write-<uuid>.part` (hidden from listings and uploads). */
const tempName = () => `.write-${randomUUID()}.part`;

async function writeTemp(dir: FileHandle, data: string | Buffer): Promise<string> {
  const temp = tempName();
  const handle = await openBeneath(dir, temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlinkBeneath(dir, temp);
    throw err;
  }
  await handle.close();
  return temp;
}

/**
 * Writes `data` to entry `name` of the held directory atomically: a temporary file created exclusively in the
 * same directory, then renamed over `name` (readers see the old or the new content, never a mix).
 */
export async function writeAtomicBeneath(dir: FileHandle, name: string, data: string | Buffer): Promise<void> {
  const temp = await writeTemp(dir, data);
  try {
    await renameBeneath(dir, temp, name);
  } catch (err) {
    await unlinkBeneath(dir, temp);
    throw err;
  }
}

/**
 * Writes `data` as a new entry `name` of the held directory, atomically and never replacing anything: the temp
 * file is hard-linked to `name` (link(2) fails with EEXIST instead of overwriting), then removed.
 * @returns false when `name` already exists (nothing written).
 */
export async function createExclusiveBeneath(dir: FileHandle, name: string, data: string | Buffer): Promise<boolean> {
  const temp = await writeTemp(dir, data);
  try {
    await link(fdPath(dir, temp), fdPath(dir, name));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await unlinkBeneath(dir, temp);
  }
}

/** Runs `fn` with a handle, closing it afterwards whatever happens. */
export async function withHandle<T>(handle: FileHandle, fn: (h: FileHandle) => Promise<T>): Promise<T> {
  try {
    return await fn(handle);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * The synchronous twin of {@link openDirBeneath} + {@link openBeneath}, for per-turn code paths that are sync: opens
 * `segments` below the trusted directory `root` one component at a time through the held descriptor, each with
 * O_NOFOLLOW (the file with {@link READ_FLAGS}), and returns the file's descriptor, which the caller closes.
 * @throws ELOOP / ENOTDIR for a symlink on the way, ENOENT when missing, EINVAL for an empty, `.`, `..` or
 *   slash-bearing component.
 */
export function openBeneathSync(root: string, segments: readonly string[]): number {
  if (segments.length === 0 || segments.some((s) => !s || s === "." || s === ".." || s.includes("/") || s.includes("\0"))) {
    throw Object.assign(new Error(`Invalid path components: ${JSON.stringify(segments)}`), { code: "EINVAL" });
  }
  let dir = openSync(root, DIR_FLAGS);
  try {
    for (const segment of segments.slice(0, -1)) {
      const next = openSync(`/proc/self/fd/${dir}/${segment}`, DIR_FLAGS);
      closeSync(dir);
      dir = next;
    }
    return openSync(`/proc/self/fd/${dir}/${segments.at(-1)}`, READ_FLAGS);
  } finally {
    closeSync(dir);
  }
}
