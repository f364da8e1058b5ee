// The default backend's storage (DeerMem core/storage.py, reduced to one JSON file per user and agent).
import { mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { getRuntimeHome } from "../../config/paths.js";
import { getLogger } from "../../logger.js";
import { emptyMemory, normalizeMemory, type MemoryDocument } from "./memory-document.js";

const SAFE_SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;

/** Thrown for a user id or agent name that cannot name a memory file. */
export class InvalidMemoryScopeError extends Error {}

/**
 * Memory files under a root directory: `<root>/users/<user_id>/memory/<agent_name>.json` (agent `default` for the
 * default agent). Writes are atomic (temp file + rename), so a crash never leaves a torn file. The root is resolved
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
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return emptyMemory();
      getLogger().warn({ agent: agentName, err: (err as NodeJS.ErrnoException).code }, "memory file unreadable; continuing with empty memory");
      return emptyMemory();
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
      return emptyMemory();
    }
  }

  /** Writes `doc` atomically, stamping `lastUpdated`; returns the written document. */
  save(userId: string, agentName: string, doc: MemoryDocument): MemoryDocument {
    const file = this.fileFor(userId, agentName);
    mkdirSync(path.dirname(file), { recursive: true });
    const stamped = { ...doc, lastUpdated: new Date().toISOString() };
    atomicWriteFile(file, `${JSON.stringify(stamped, null, 2)}\n`);
    return stamped;
  }

  /** Loads, applies `change` (which may mutate or return a new document), saves; returns the saved document. */
  update(userId: string, agentName: string, change: (doc: MemoryDocument) => MemoryDocument | void): MemoryDocument {
    const doc = this.load(userId, agentName);
    return this.save(userId, agentName, change(doc) ?? doc);
  }

  /** Deletes the memory file of `userId` / `agentName` (nothing when missing). */
  remove(userId: string, agentName: string): void {
    rmSync(this.fileFor(userId, agentName), { force: true });
  }
}
