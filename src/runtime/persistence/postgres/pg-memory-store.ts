// Memory documents in PostgreSQL (`database.backend: postgres`): the `memory_documents` table, one row per owner and
// scope (agent `default` is the user's global memory, any other name an agent's own), so gateway hosts with separate
// DEER_FLOW_HOMEs share a user's memory, and its per-document compare-and-set holds across all of them.
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type pg from "pg";
import { FileMemoryStore } from "../../../agents/memory/file-memory-store.js";
import { MemoryConflictError } from "../../../agents/memory/manager.js";
import { emptyMemory, normalizeMemory, type MemoryDocument } from "../../../agents/memory/memory-document.js";
import type { MemoryChange, MemoryDocuments, VersionedMemory } from "../../../agents/memory/memory-store.js";
import { inTransaction, migrateUnderLock } from "./pg-transaction.js";

/** Serialises the DDL of processes starting together. */
const MEMORY_DDL_LOCK = 0x0de3f51;

const DDL = [
  `CREATE TABLE IF NOT EXISTS memory_documents (
     owner_id TEXT NOT NULL, scope TEXT NOT NULL, document JSONB NOT NULL, revision INTEGER NOT NULL,
     updated_at TEXT NOT NULL, PRIMARY KEY (owner_id, scope))`,
] as const;

/**
 * How long a writer waits for a document's row lock before giving up with a conflict (409), as the file store's
 * lock wait: a write holds the lock for one read and one update.
 */
const LOCK_WAIT = "5s";

/** PostgreSQL's `lock_not_available` (the `lock_timeout` ran out). */
const LOCK_NOT_AVAILABLE = "55P03";

/** The marker a home gets once its memory files were imported (see {@link PgMemoryStore.adoptFiles}). */
export const IMPORTED_MARKER = ".memory-imported-to-postgres";

const versionOf = (row: { revision: number; updated_at: string }) => `${row.revision}@${row.updated_at}`;

/** {@link MemoryDocuments} over a pg pool. Call {@link PgMemoryStore.migrate} once before use. */
export class PgMemoryStore implements MemoryDocuments {
  readonly kind = "postgres";

  constructor(private readonly pool: pg.Pool) {}

  /** Creates the `memory_documents` table when missing (idempotent, serialised across processes). */
  static async migrate(pool: pg.Pool): Promise<void> {
    await migrateUnderLock(pool, MEMORY_DDL_LOCK, DDL);
  }

  async read(userId: string, agentName: string, known?: string): Promise<VersionedMemory | null> {
    // One round trip; an unchanged document (the common case: injected on every model call) is not transferred.
    const { rows } = await this.pool.query<{ revision: number; updated_at: string; document: unknown }>(
      "SELECT revision, updated_at, CASE WHEN revision || '@' || updated_at = $3 THEN NULL ELSE document END AS document FROM memory_documents WHERE owner_id = $1 AND scope = $2",
      [userId, agentName, known ?? ""],
    );
    const row = rows[0];
    if (!row) return null;
    return { version: versionOf(row), doc: row.document === null ? null : { ...normalizeMemory(row.document), revision: row.revision } };
  }

  async update(userId: string, agentName: string, change: MemoryChange): Promise<MemoryDocument> {
    return this.locked(userId, agentName, (current) => change(current) ?? current);
  }

  async save(userId: string, agentName: string, doc: MemoryDocument, expectedRevision?: number): Promise<MemoryDocument> {
    return this.locked(userId, agentName, (current) => {
      if (expectedRevision !== undefined && expectedRevision !== (current.revision ?? 0)) throw new MemoryConflictError();
      return doc;
    });
  }

  async remove(userId: string, agentName: string): Promise<void> {
    await this.pool.query("DELETE FROM memory_documents WHERE owner_id = $1 AND scope = $2", [userId, agentName]);
  }

  /**
   * In one transaction: the document's row is created when missing (revision 0, empty) and locked (`FOR UPDATE`),
   * `next` computes the new document from the stored one, which is written as revision + 1. Concurrent writers of
   * one document queue on the row lock, in any process; one that waits past {@link LOCK_WAIT} gets a conflict.
   * A `next` that throws rolls everything back (a row created for it included).
   */
  private async locked(userId: string, agentName: string, next: (current: MemoryDocument) => MemoryDocument): Promise<MemoryDocument> {
    try {
      return await inTransaction(this.pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
        await client.query("INSERT INTO memory_documents (owner_id, scope, document, revision, updated_at) VALUES ($1, $2, '{}'::jsonb, 0, '') ON CONFLICT DO NOTHING", [userId, agentName]);
        const { rows } = await client.query<{ document: unknown; revision: number }>("SELECT document, revision FROM memory_documents WHERE owner_id = $1 AND scope = $2 FOR UPDATE", [userId, agentName]);
        const current: MemoryDocument = rows[0].revision === 0 ? { ...emptyMemory(), revision: 0 } : { ...normalizeMemory(rows[0].document), revision: rows[0].revision };
        const revision = rows[0].revision + 1;
        const stamped = { ...next(current), revision, lastUpdated: new Date().toISOString() };
        await client.query("UPDATE memory_documents SET document = $3, revision = $4, updated_at = $5 WHERE owner_id = $1 AND scope = $2", [userId, agentName, JSON.stringify(stamped), revision, stamped.lastUpdated]);
        return stamped;
      });
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw new MemoryConflictError();
      throw err;
    }
  }

  /**
   * The one-time import of a home's memory files (`<root>/users/<user>/memory/<agent>.json`) when PostgreSQL is
   * first used: each document PostgreSQL does not hold yet is inserted as it is (revision kept); one it holds
   * already (written since, or imported by another home first) wins. Then `<root>/.memory-imported-to-postgres`
   * is written and later starts import nothing; the files stay as they were (a backup, no longer read).
   * Malformed files are moved aside as the file store does. @returns how many documents were inserted.
   */
  async adoptFiles(root: string): Promise<number> {
    const marker = path.join(root, IMPORTED_MARKER);
    if (existsSync(marker)) return 0;
    const files = new FileMemoryStore(root);
    let imported = 0;
    for (const [userId, agentName] of memoryFilesUnder(root)) {
      const doc = files.load(userId, agentName);
      if (!doc.revision && !doc.facts.length && !doc.lastUpdated) continue;
      const revision = Math.max(1, doc.revision ?? 0);
      const result = await this.pool.query(
        "INSERT INTO memory_documents (owner_id, scope, document, revision, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        [userId, agentName, JSON.stringify({ ...doc, revision }), revision, doc.lastUpdated || new Date().toISOString()],
      );
      imported += result.rowCount ?? 0;
    }
    if (existsSync(root)) writeFileSync(marker, `${JSON.stringify({ imported, at: new Date().toISOString() })}\n`);
    return imported;
  }
}

/** `[user, agent]` of every `<root>/users/<user>/memory/<agent>.json` whose names are valid memory scopes. */
function memoryFilesUnder(root: string): [string, string][] {
  const valid = /^[A-Za-z0-9_-]{1,128}$/;
  const list = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
  return list(path.join(root, "users")).flatMap((userId) =>
    valid.test(userId)
      ? list(path.join(root, "users", userId, "memory"))
          .filter((f) => f.endsWith(".json") && valid.test(f.slice(0, -5)))
          .map((f): [string, string] => [userId, f.slice(0, -5)])
      : [],
  );
}
