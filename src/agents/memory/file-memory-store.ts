// The default backend's storage (DeerMem core/storage.py, reduced to one JSON file per user and agent).
import { mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { getRuntimeHome } from "../../config/paths.js";
import { getLogger } from "../../logger.js";
import { MemoryConflictError } from "./manager.js";
import { emptyMemory, normalizeMemory, type MemoryDocument } from "./memory-document.js";

const SAFE_SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;
/** A lock older than this was left by a writer that died holding it (a write holds it for milliseconds), in ms. */
const LOCK_STALE_MS = 10_000;
/** How long a writer waits for the lock before giving up with a conflict (409), in ms. */
const LOCK_WAIT_MS = 5_000;

/** The document of a scope never written (or whose file was moved aside): empty, revision 0. */
const unwritten = (): MemoryDocument => ({ ...emptyMemory(), revision: 0 });

const sleepSync = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `work` holding the lock directory `lockDir` (mkdir is atomic across processes sharing the file system, so
 * gateway workers on one home exclude each other). The work is synchronous and short (read the revision, write,
 * rename), so waiting is a short synchronous back-off; a lock older than {@link LOCK_STALE_MS} is taken over.
 * @throws MemoryConflictError when the lock stays held for {@link LOCK_WAIT_MS}.
 */
function withFileLock<T>(lockDir: string, work: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let backoff = 1; ; backoff = Math.min(backoff * 2, 16)) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const held = statSync(lockDir, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > LOCK_STALE_MS) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() >= deadline) throw new MemoryConflictError();
      sleepSync(backoff);
    }
  }
  try {
    return work();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/** Thrown for a user id or agent name that cannot name a memory file. */
export class InvalidMemoryScopeError extends Error {}

/**
 * Memory files under a root directory: `<root>/users/<user_id>/memory/<agent_name>.json` (agent `default` for the
 * default agent). Writes are atomic (temp file + rename), so a crash never leaves a torn file, and each is a compare-and-set on
 * the document's `revision` under a per-scope lock (see {@link FileMemoryStore.save} and `update`), so concurrent
 * writers, in one process or several sharing the directory, never lose an update. The root is resolved
 * on first use (default `DEER_FLOW_HOME`) and then kept, so creating a store does no I/O and queued writes land
 * where the first use pointed.
 *
 * A file that is not valid JSON or not a memory document is moved aside to `<agent>.json.corrupt-<timestamp>`
 * (kept for the operator, never overwritten) with a logged warning, and reads as empty memory: the run goes on,
 * and the next write starts a fresh file instead of silently replacing the unreadable one.
 */
export class FileMemoryStore {
  private root?: string;

  /** @param root Directory that holds `users/`; default `DEER_FLOW_HOME`. */
  constructor(root?: string) {
    this.root = root;
  }

  /**
   * Path of the memory file of `userId` / `agentName`.
   * @throws InvalidMemoryScopeError when an id is not a safe path segment (`^[A-Za-z0-9_-]{1,128}$`).
   */
  fileFor(userId: string, agentName: string): string {
    for (const [label, id] of [["user id", userId], ["agent name", agentName]] as const) {
      if (!SAFE_SEGMENT.test(id)) throw new InvalidMemoryScopeError(`Invalid ${label} for memory storage`);
    }
    this.root ??= getRuntimeHome();
    return path.join(this.root, "users", userId, "memory", `${agentName}.json`);
  }

  /** The memory of `userId` / `agentName`: empty when the file is missing; a malformed file is moved aside (see class doc). */
  load(userId: string, agentName: string): MemoryDocument {
    const file = this.fileFor(userId, agentName);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return unwritten();
      getLogger().warn({ agent: agentName, err: (err as NodeJS.ErrnoException).code }, "memory file unreadable; continuing with empty memory");
      return unwritten();
    }
    try {
      return normalizeMemory(JSON.parse(text));
    } catch (err) {
      const aside = `${file}.corrupt-${new Date().toISOString().replace(/[:.]/g, "-")}`;
      try {
        renameSync(file, aside);
      } catch {
        // Another reader moved it first: the copy exists either way.
      }
      getLogger().warn({ agent: agentName, kept_as: path.basename(aside), err: (err as Error).message }, "memory file is malformed; moved aside, continuing with empty memory");
      return unwritten();
    }
  }

  /**
   * Writes `doc` atomically as the next revision (compare-and-set): under the scope's lock, the stored revision is
   * read; when `expectedRevision` is given and differs, nothing is written; else `doc` is written with `revision`
   * one higher and `lastUpdated` stamped. Returns the written document.
   * @throws MemoryConflictError for a stale `expectedRevision` (or a lock held past {@link LOCK_WAIT_MS}).
   */
  save(userId: string, agentName: string, doc: MemoryDocument, expectedRevision?: number): MemoryDocument {
    return this.locked(userId, agentName, (current) => {
      if (expectedRevision !== undefined && expectedRevision !== (current.revision ?? 0)) throw new MemoryConflictError();
      return doc;
    });
  }

  /**
   * Loads, applies `change` (which may mutate or return a new document) and saves it as the next revision, all
   * under the scope's lock: concurrent updates (requests, the memory updater, other processes on the same home)
   * apply one after another, and none overwrites another. Returns the saved document.
   * @throws whatever `change` throws (nothing is written); MemoryConflictError when the lock stays held.
   */
  update(userId: string, agentName: string, change: (doc: MemoryDocument) => MemoryDocument | void): MemoryDocument {
    return this.locked(userId, agentName, (current) => change(current) ?? current);
  }

  /** Under the scope's lock: reads the stored document, asks `next` for the new one, writes it as revision + 1. */
  private locked(userId: string, agentName: string, next: (current: MemoryDocument) => MemoryDocument): MemoryDocument {
    const file = this.fileFor(userId, agentName);
    mkdirSync(path.dirname(file), { recursive: true });
    return withFileLock(`${file}.lock`, () => {
      const current = this.load(userId, agentName);
      const revision = (current.revision ?? 0) + 1;
      const stamped = { ...next(current), revision, lastUpdated: new Date().toISOString() };
      atomicWriteFile(file, `${JSON.stringify(stamped, null, 2)}\n`);
      return stamped;
    });
  }

  /** Deletes the memory file of `userId` / `agentName` (nothing when missing). */
  remove(userId: string, agentName: string): void {
    rmSync(this.fileFor(userId, agentName), { force: true });
  }
}
