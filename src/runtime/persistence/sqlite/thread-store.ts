// The thread table (LangGraph "threads"): ids, status, metadata and timestamps. State lives in checkpoints.
import type Database from "better-sqlite3";
import { DEFAULT_USER_ID } from "../../../agents/run-context.js";
import type { ThreadRecord, ThreadRepository, ThreadSearchQuery } from "../repositories.js";
import type { ThreadStatus } from "../../wire/wire-enums.js";
import { commitWith, type GroupCommit } from "./group-commit.js";
import { StatementCache } from "./statement-cache.js";

export type { ThreadStatus } from "../../wire/wire-enums.js";

/** Metadata keys the server owns; callers cannot set them. */
const SERVER_KEYS = ["user_id", "owner_id"];

interface Row {
  thread_id: string;
  owner_id: string;
  status: ThreadStatus;
  metadata: string;
  created_at: string;
  updated_at: string;
}

/**
 * Threads in a better-sqlite3 database. The statements are synchronous (every call is atomic within the
 * process); the methods are async only to share {@link ThreadRepository} with PostgreSQL. With a {@link GroupCommit}
 * the writes join the connection's group commit (each call answered once its write is committed, reads commit the
 * queue first); without one each write commits at once.
 */
export class ThreadStore implements ThreadRepository {
  private readonly statements: StatementCache;

  /**
   * @param db The connection; the `threads` table is created (and migrated) here.
   * @param commits The connection's write queue, shared with the other stores on `db`.
   */
  constructor(
    db: Database.Database,
    private readonly commits?: GroupCommit,
  ) {
    this.statements = new StatementCache(db);
    db.exec(`CREATE TABLE IF NOT EXISTS threads (
      thread_id TEXT PRIMARY KEY, status TEXT NOT NULL, metadata TEXT NOT NULL,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`);
    // Idempotent migration: rows from before ownership belong to the default user.
    const columns = db.prepare("PRAGMA table_info(threads)").all() as { name: string }[];
    if (!columns.some((c) => c.name === "owner_id")) db.exec(`ALTER TABLE threads ADD COLUMN owner_id TEXT NOT NULL DEFAULT '${DEFAULT_USER_ID}'`);
    db.exec("CREATE INDEX IF NOT EXISTS threads_owner ON threads (owner_id, updated_at)");
  }

  private static toRecord(row: Row | undefined): ThreadRecord | null {
    return row ? { ...row, metadata: JSON.parse(row.metadata) as Record<string, unknown> } : null;
  }

  /** Strips server-owned keys (`user_id`, `owner_id`) from caller metadata. */
  static cleanMetadata(metadata: Record<string, unknown> | null | undefined): Record<string, unknown> {
    const out = { ...(metadata ?? {}) };
    for (const k of SERVER_KEYS) delete out[k];
    return out;
  }

  /** The thread whoever owns it, or null. Routes use {@link getOwned}; this is for the server's own bookkeeping. */
  async get(threadId: string): Promise<ThreadRecord | null> {
    return this.getSync(threadId);
  }

  /** The thread after committing the queue (never inside a write: it would commit the group from within). */
  private getSync(threadId: string): ThreadRecord | null {
    this.commits?.flush();
    return this.row(threadId);
  }

  /** The thread as this connection sees it now. */
  private row(threadId: string): ThreadRecord | null {
    return ThreadStore.toRecord(this.statements.get("SELECT * FROM threads WHERE thread_id = ?").get(threadId) as Row | undefined);
  }

  /** The thread when `ownerId` owns it, else null (a thread of another user reads exactly as a missing one). */
  async getOwned(threadId: string, ownerId: string): Promise<ThreadRecord | null> {
    const thread = this.getSync(threadId);
    return thread && thread.owner_id === ownerId ? thread : null;
  }

  /**
   * Creates the thread if absent, owned by `ownerId` (idempotent: an existing thread is returned unchanged, whoever
   * owns it; callers that must not touch another user's thread check {@link getOwned} first).
   */
  async create(threadId: string, metadata: Record<string, unknown> = {}, ownerId: string = DEFAULT_USER_ID): Promise<ThreadRecord> {
    return this.insert(threadId, ownerId, "idle", metadata, () => this.row(threadId)!);
  }

  /** See {@link ThreadRepository.createForRun}: one statement, where `create` needs a read back. */
  async createForRun(threadId: string, ownerId: string): Promise<boolean> {
    return this.insert(threadId, ownerId, "busy", {}, (inserted) => inserted);
  }

  /** Inserts the thread unless its id exists; answers `then(whether it did)`, read in the same write. */
  private insert<T>(threadId: string, ownerId: string, status: ThreadStatus, metadata: Record<string, unknown>, then: (inserted: boolean) => T): Promise<T> {
    const now = new Date().toISOString();
    const json = JSON.stringify(ThreadStore.cleanMetadata(metadata));
    return commitWith(this.commits, () =>
      then(
        this.statements
          .get("INSERT OR IGNORE INTO threads (thread_id, owner_id, status, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)")
          .run(threadId, ownerId, status, json, now, now).changes > 0,
      ),
    );
  }

  /** Merges `metadata` into the thread's metadata (server-owned keys dropped); null for an unknown thread. */
  async patchMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord | null> {
    const patch = ThreadStore.cleanMetadata(metadata);
    // Read, merge and write in one write: a patch queued before this one is applied first.
    return commitWith(this.commits, () => {
      const thread = this.row(threadId);
      if (!thread) return null;
      const merged = { ...thread.metadata, ...patch };
      this.statements.get("UPDATE threads SET metadata = ?, updated_at = ? WHERE thread_id = ?").run(JSON.stringify(merged), new Date().toISOString(), threadId);
      return this.row(threadId);
    });
  }

  /** Deletes the thread row; returns whether it existed. */
  async delete(threadId: string): Promise<boolean> {
    return commitWith(this.commits, () => this.statements.get("DELETE FROM threads WHERE thread_id = ?").run(threadId).changes > 0);
  }

  /**
   * Threads matching every key of `metadata` (JSON equality per key) and `status`, optionally restricted to `ids`,
   * sorted (`sort_by` one of thread_id, status, created_at, updated_at; default `updated_at desc`) and paged.
   */
  async search(query: ThreadSearchQuery): Promise<ThreadRecord[]> {
    const column = ["thread_id", "status", "created_at", "updated_at"].includes(query.sortBy ?? "") ? query.sortBy : "updated_at";
    const order = query.sortOrder === "asc" ? "ASC" : "DESC";
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.ownerId !== undefined) {
      where.push("owner_id = ?");
      params.push(query.ownerId);
    }
    if (query.status) {
      where.push("status = ?");
      params.push(query.status);
    }
    if (query.ids?.length) {
      where.push(`thread_id IN (${query.ids.map(() => "?").join(",")})`);
      params.push(...query.ids);
    }
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      // Same JSON type and value: "1" does not match 1, objects compare by their minified JSON.
      where.push("json_type(metadata, ?) = json_type(?, '$') AND json_extract(metadata, ?) = json_extract(?, '$')");
      const path = `$."${key.replace(/"/g, '""')}"`;
      const json = JSON.stringify(value);
      params.push(path, json, path, json);
    }
    this.commits?.flush();
    const sql = `SELECT * FROM threads ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY ${column} ${order}, rowid ${order} LIMIT ? OFFSET ?`;
    const rows = this.statements.get(sql).all(...params, query.limit, query.offset) as Row[];
    return rows.map((r) => ThreadStore.toRecord(r)!);
  }

  /** Threads left `busy` by a process that died mid-run go back to `idle`; returns how many. */
  async resetBusy(): Promise<number> {
    const now = new Date().toISOString();
    return commitWith(this.commits, () => this.statements.get("UPDATE threads SET status = 'idle', updated_at = ? WHERE status = 'busy'").run(now).changes);
  }

  /** Sets the status (and `updated_at`). No-op for an unknown thread. */
  async setStatus(threadId: string, status: ThreadStatus): Promise<void> {
    const now = new Date().toISOString();
    await commitWith(this.commits, () => this.statements.get("UPDATE threads SET status = ?, updated_at = ? WHERE thread_id = ?").run(status, now, threadId));
  }
}
