// Crash-safe file replacement: a reader sees the old file or the new one, never a torn write.
import { closeSync, fsyncSync, lstatSync, openSync, readdirSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";

/** A temp file of {@link atomicWriteFile}: `.<name>.<12 hex>.tmp`. */
export const ATOMIC_TEMP = /^\..+\.[0-9a-f]{12}\.tmp$/;

/**
 * Temp files younger than this are left alone, in ms: another process sharing the directory (cluster mode) may
 * still be writing them. Longer than the longest request (120 s, see `DEFAULT_SERVER_TIMEOUTS`).
 */
export const LEFTOVER_MIN_AGE_MS = 10 * 60 * 1000;

/** Directories this process already swept (see {@link sweepTempFiles}); bounded, re-sweeping is only a readdir. */
const swept = new Set<string>();
const SWEPT_MAX = 10_000;

/**
 * Removes the temp files of killed atomic writes in `dir` that are older than `minAgeMs` (never throws;
 * unreadable entries are skipped). @returns how many files and bytes went.
 * @param now Current time in ms since the epoch (tests pass a later time instead of ageing files).
 */
export function sweepTempFiles(dir: string, minAgeMs = LEFTOVER_MIN_AGE_MS, now = Date.now()): { files: number; bytes: number } {
  const out = { files: 0, bytes: 0 };
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (!ATOMIC_TEMP.test(name)) continue;
    const full = path.join(dir, name);
    try {
      const info = lstatSync(full);
      if (now - info.mtimeMs < minAgeMs) continue;
      rmSync(full, { recursive: true, force: true });
      out.files++;
      if (info.isFile()) out.bytes += info.size;
    } catch {
      // Gone already (another process swept it): nothing to do.
    }
  }
  return out;
}

/**
 * Sweeps `dir` the first time this process writes there: every directory written atomically (memory, custom
 * skills, the user profile, the MCP config, agents, feedback) is swept by construction, not by a list of them
 * that a new writer could miss.
 */
function sweepOnFirstWrite(dir: string): void {
  if (swept.has(dir)) return;
  if (swept.size >= SWEPT_MAX) swept.clear();
  swept.add(dir);
  sweepTempFiles(dir);
}

/** Options of {@link atomicWriteFile}. */
export interface AtomicWriteOptions {
  /** Called after the temp file is durable and before the rename (tests use it to crash a writer there). */
  beforeRename?: (tempPath: string) => void;
}

/**
 * Writes `content` to `file` atomically: a temp file `.<name>.<random>.tmp` in the same directory is written and
 * fsynced, renamed over the target, then the directory is fsynced so the rename survives a power loss. A crash at
 * any point leaves the previous file intact (at worst a stray `.tmp` file, removed by the first write to the same
 * directory from a later process, once older than {@link LEFTOVER_MIN_AGE_MS}). Mirrors DeerFlow's file store
 * (`file.py:223-259`), plus fsync.
 * @throws the underlying fs error; the temp file is removed first.
 */
export function atomicWriteFile(file: string, content: string, options: AtomicWriteOptions = {}): void {
  const dir = path.dirname(file);
  sweepOnFirstWrite(dir);
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
  fsyncDir(dir);
}

/**
 * Makes the renames and creations inside directory `dir` durable (fsync of the directory); a no-op where
 * directories cannot be fsynced (some network filesystems), since the rename itself is atomic either way.
 */
export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not supported everywhere; see above.
  }
}
