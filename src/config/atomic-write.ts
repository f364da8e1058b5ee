// Crash-safe file replacement: a reader sees the old file or the new one, never a torn write.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";

/** Options of {@link atomicWriteFile}. */
export interface AtomicWriteOptions {
  /** Called after the temp file is durable and before the rename (tests use it to crash a writer there). */
  beforeRename?: (tempPath: string) => void;
}

/**
 * Writes `content` to `file` atomically: a temp file `.<name>.<random>.tmp` in the same directory is written and
 * fsynced, renamed over the target, then the directory is fsynced so the rename survives a power loss. A crash at
 * any point leaves the previous file intact (at worst a stray `.tmp` file). Mirrors DeerFlow's file store
 * (`file.py:223-259`), plus fsync.
 * @throws the underlying fs error; the temp file is removed first.
 */
export function atomicWriteFile(file: string, content: string, options: AtomicWriteOptions = {}): void {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const fd = openSync(temp, "w", 0o644);
    try {
      writeSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    options.beforeRename?.(temp);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  try {
    const dirFd = openSync(dir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    // Directory fsync is not supported everywhere (e.g. some network filesystems); the rename itself is atomic.
  }
}
