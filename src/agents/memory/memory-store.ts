// Where DeerMem's documents live, as one asynchronous contract: JSON files under the runtime home (FileMemoryStore,
// the default and SQLite's companion), or PostgreSQL under `database.backend: postgres`
// (src/runtime/persistence/postgres/pg-memory-store.ts), so gateway hosts with separate homes share a user's memory.
import { statSync } from "node:fs";
import type { FileMemoryStore } from "./file-memory-store.js";
import type { MemoryDocument } from "./memory-document.js";

/**
 * A stored document and its version token (opaque: equal tokens mean the same stored bytes). `doc` is null when the
 * caller's `known` token still matches (nothing was transferred); `version` is null when the document must not be
 * cached (a malformed file was just moved aside).
 */
export interface VersionedMemory {
  version: string | null;
  doc: MemoryDocument | null;
}

/** A change of a document: mutate it in place or return a new one; throwing writes nothing. */
export type MemoryChange = (doc: MemoryDocument) => MemoryDocument | void;

/**
 * Storage of memory documents per (user, agent), each with a `revision` that every write increments. Writes are
 * serialised per document (a lock, or a row lock in one transaction), so concurrent writers in any process never
 * lose an update.
 */
export interface MemoryDocuments {
  /** Human-readable backend (`files`, `postgres`), for logs. */
  readonly kind: string;
  /**
   * The document of `userId` / `agentName`, or null when it was never written. With `known` (a version token from
   * an earlier read) an unchanged document comes back as `{ version, doc: null }`.
   */
  read(userId: string, agentName: string, known?: string): Promise<VersionedMemory | null>;
  /**
   * Applies `change` to the stored document (revision 0 and empty when unwritten) and stores it as revision + 1 with
   * `lastUpdated` stamped, under the document's lock. Returns the stored document.
   * @throws whatever `change` throws (nothing written); MemoryConflictError when the lock stays held past its wait.
   */
  update(userId: string, agentName: string, change: MemoryChange): Promise<MemoryDocument>;
  /**
   * Compare-and-set: stores `doc` as the next revision only when the stored revision equals `expectedRevision`
   * (any, when omitted). @throws MemoryConflictError for a stale revision (409 over HTTP).
   */
  save(userId: string, agentName: string, doc: MemoryDocument, expectedRevision?: number): Promise<MemoryDocument>;
  /** Deletes the document (nothing when missing). */
  remove(userId: string, agentName: string): Promise<void>;
}

/**
 * {@link MemoryDocuments} over a {@link FileMemoryStore}: the version token is the file's mtime and size, so a file
 * another process (or an operator) rewrote is read again.
 */
export function fileDocuments(store: FileMemoryStore): MemoryDocuments {
  const stamp = (file: string): string | null => {
    const stat = statSync(file, { throwIfNoEntry: false });
    return stat ? `${stat.mtimeMs}:${stat.size}` : null;
  };
  return {
    kind: "files",
    async read(userId, agentName, known) {
      const file = store.fileFor(userId, agentName);
      // Most users have no memory file yet: no exception for a missing one (this runs on every model call).
      const before = stamp(file);
      if (before === null) return null;
      if (before === known) return { version: before, doc: null };
      const doc = store.load(userId, agentName);
      // A malformed file was moved aside by load: its (empty) reading is not cached.
      return { version: stamp(file), doc };
    },
    update: async (userId, agentName, change) => store.update(userId, agentName, change),
    save: async (userId, agentName, doc, expected) => store.save(userId, agentName, doc, expected),
    remove: async (userId, agentName) => store.remove(userId, agentName),
  };
}
