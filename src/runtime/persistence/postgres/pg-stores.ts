// The thread and run repositories on PostgreSQL (`database.backend: postgres`): every gateway process that points
// at the same database sees the same threads and runs. Same contracts as the SQLite stores.
import pg from "pg";
import { DEFAULT_USER_ID } from "../../../agents/run-context.js";
import type { RunListOptions, RunRepository, ThreadRepository, ThreadSearchQuery } from "../repositories.js";
import type { RunRecord, ThreadRecord } from "../repositories.js";
import { kwargsJson, runCountersOf } from "../../runs/run-counters.js";
import { ThreadStore, type ThreadStatus } from "../sqlite/thread-store.js";
import { ACTIVE_RUN_STATUSES, countOf, FAILED_RUN_STATUSES, usageRow, type OwnerRunPage, type OwnerRunStats, type RunUsageRow } from "../owner-runs.js";

/** The runs of one owner's threads (`$1` = the owner id). */
const OWNED_RUNS = "FROM runs r JOIN threads t ON t.thread_id = r.thread_id WHERE t.owner_id = $1";
const tokens = (key: string) => `COALESCE((r.counters ->> '${key}')::numeric, 0)`;

/**
 * Schema migrations, applied in order, each once (recorded in `deerflow_migrations`). Append only: a released
 * migration never changes. Timestamps stay ISO strings, as in SQLite, so records compare byte for byte.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS threads (
     seq BIGSERIAL UNIQUE, thread_id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, status TEXT NOT NULL,
     metadata JSONB NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
   CREATE INDEX IF NOT EXISTS threads_by_updated ON threads (updated_at);
   CREATE INDEX IF NOT EXISTS threads_owner ON threads (owner_id, updated_at);
   CREATE TABLE IF NOT EXISTS runs (
     seq BIGSERIAL UNIQUE, run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL,
     status TEXT NOT NULL, metadata JSONB NOT NULL, kwargs JSONB NOT NULL, multitask_strategy TEXT NOT NULL,
     created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT);
   CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, created_at);
   CREATE INDEX IF NOT EXISTS runs_in_flight ON runs (status) WHERE status IN ('pending', 'running');`,
  `CREATE TABLE IF NOT EXISTS users (
     id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, password_hash TEXT, system_role TEXT NOT NULL,
     created_at TEXT NOT NULL, needs_setup BOOLEAN NOT NULL DEFAULT FALSE, token_version INTEGER NOT NULL DEFAULT 0,
     oauth_provider TEXT);
   CREATE TABLE IF NOT EXISTS api_keys (
     seq BIGSERIAL UNIQUE, id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, prefix TEXT NOT NULL,
     key_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, last_used_at TEXT);
   CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys (user_id);`,
  // Run counters (shown in the Run JSON of a finished run): token totals by caller, model calls, messages, stop reason.
  `ALTER TABLE runs ADD COLUMN IF NOT EXISTS counters JSONB NOT NULL DEFAULT '{}'::jsonb`,
  // Server-side sessions (a logout ends the session in every process) and the shared login counters (lockout).
  `CREATE TABLE IF NOT EXISTS auth_sessions (
     id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL, expires_at BIGINT NOT NULL);
   CREATE INDEX IF NOT EXISTS auth_sessions_user ON auth_sessions (user_id);
   CREATE INDEX IF NOT EXISTS auth_sessions_expiry ON auth_sessions (expires_at);
   CREATE TABLE IF NOT EXISTS login_counters (
     key TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_until BIGINT NOT NULL, forget_at BIGINT NOT NULL);
   CREATE INDEX IF NOT EXISTS login_counters_forget ON login_counters (forget_at);`,
];

/** Any advisory-lock key unique to this schema: concurrent starts migrate one at a time. */
const MIGRATION_LOCK = 0x0de3f10;

/**
 * Applies the pending {@link MIGRATIONS} in one transaction under an advisory lock, so processes starting together
 * neither race nor apply a migration twice. Idempotent.
 * @throws the database error when a migration fails (nothing of it is applied).
 */
export async function migratePostgres(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS deerflow_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
    const { rows } = await client.query<{ version: number }>("SELECT version FROM deerflow_migrations");
    const applied = new Set(rows.map((r) => r.version));
    for (const [i, sql] of MIGRATIONS.entries()) {
      if (applied.has(i + 1)) continue;
      await client.query(sql);
      await client.query("INSERT INTO deerflow_migrations (version, applied_at) VALUES ($1, $2)", [i + 1, new Date().toISOString()]);
    }
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** A `threads` row: the record itself (`metadata` is JSONB, so it arrives parsed). */
type ThreadRow = ThreadRecord;

const THREAD_COLUMNS = "thread_id, owner_id, status, metadata, created_at, updated_at";
const toThread = (row: ThreadRow | undefined): ThreadRecord | null => (row ? { ...row } : null);

/** Threads in PostgreSQL (`threads` table, metadata as JSONB). */
export class PgThreadStore implements ThreadRepository {
  constructor(private readonly pool: pg.Pool) {}

  async get(threadId: string): Promise<ThreadRecord | null> {
    const { rows } = await this.pool.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM threads WHERE thread_id = $1`, [threadId]);
    return toThread(rows[0]);
  }

  async getOwned(threadId: string, ownerId: string): Promise<ThreadRecord | null> {
    const { rows } = await this.pool.query<ThreadRow>(`SELECT ${THREAD_COLUMNS} FROM threads WHERE thread_id = $1 AND owner_id = $2`, [threadId, ownerId]);
    return toThread(rows[0]);
  }

  async create(threadId: string, metadata: Record<string, unknown> = {}, ownerId: string = DEFAULT_USER_ID): Promise<ThreadRecord> {
    // ON CONFLICT DO NOTHING + read back: two processes creating the same id both get the one stored row.
    await this.insert(threadId, ownerId, "idle", metadata);
    return (await this.get(threadId))!;
  }

  async createForRun(threadId: string, ownerId: string): Promise<boolean> {
    return this.insert(threadId, ownerId, "busy", {});
  }

  /** Inserts the thread unless its id exists; resolves whether it did. */
  private async insert(threadId: string, ownerId: string, status: ThreadStatus, metadata: Record<string, unknown>): Promise<boolean> {
    const result = await this.pool.query(
      "INSERT INTO threads (thread_id, owner_id, status, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (thread_id) DO NOTHING",
      [threadId, ownerId, status, JSON.stringify(ThreadStore.cleanMetadata(metadata)), new Date().toISOString()],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async patchMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord | null> {
    // One statement: `||` merges at the top level, so concurrent patches of different keys both survive.
    const { rows } = await this.pool.query<ThreadRow>(
      `UPDATE threads SET metadata = metadata || $2::jsonb, updated_at = $3 WHERE thread_id = $1 RETURNING ${THREAD_COLUMNS}`,
      [threadId, JSON.stringify(ThreadStore.cleanMetadata(metadata)), new Date().toISOString()],
    );
    return toThread(rows[0]);
  }

  async delete(threadId: string): Promise<boolean> {
    return ((await this.pool.query("DELETE FROM threads WHERE thread_id = $1", [threadId])).rowCount ?? 0) > 0;
  }

  async search(query: ThreadSearchQuery): Promise<ThreadRecord[]> {
    const column = ["thread_id", "status", "created_at", "updated_at"].includes(query.sortBy ?? "") ? query.sortBy : "updated_at";
    const order = query.sortOrder === "asc" ? "ASC" : "DESC";
    const where: string[] = [];
    const params: unknown[] = [];
    const param = (value: unknown) => `$${params.push(value)}`;
    if (query.ownerId !== undefined) where.push(`owner_id = ${param(query.ownerId)}`);
    if (query.status) where.push(`status = ${param(query.status)}`);
    if (query.ids?.length) where.push(`thread_id = ANY(${param(query.ids)}::text[])`);
    for (const [key, value] of Object.entries(query.metadata ?? {})) {
      // JSONB equality: same type and value ("1" does not match 1), objects compare structurally.
      where.push(`metadata -> ${param(key)} = ${param(JSON.stringify(value))}::jsonb`);
    }
    const sql = `SELECT ${THREAD_COLUMNS} FROM threads ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY ${column} ${order}, seq ${order} LIMIT ${param(query.limit)} OFFSET ${param(query.offset)}`;
    return (await this.pool.query<ThreadRow>(sql, params)).rows.map((r) => toThread(r)!);
  }

  async resetBusy(): Promise<number> {
    return (await this.pool.query("UPDATE threads SET status = 'idle', updated_at = $1 WHERE status = 'busy'", [new Date().toISOString()])).rowCount ?? 0;
  }

  async setStatus(threadId: string, status: ThreadStatus): Promise<void> {
    await this.pool.query("UPDATE threads SET status = $2, updated_at = $3 WHERE thread_id = $1", [threadId, status, new Date().toISOString()]);
  }
}

interface RunRow extends Omit<RunRecord, "error"> {
  error: string | null;
  counters: unknown;
}

const RUN_COLUMNS = "run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at, error, counters";
const toRun = (row: RunRow | undefined): RunRecord | null => {
  if (!row) return null;
  const { error, counters, ...rest } = row;
  return { ...rest, ...runCountersOf(counters), ...(error !== null ? { error } : {}) };
};

/** Run records in PostgreSQL (`runs` table). */
export class PgRunStore implements RunRepository {
  constructor(private readonly pool: pg.Pool) {}

  async save(record: RunRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO runs (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, metadata = EXCLUDED.metadata,
         updated_at = EXCLUDED.updated_at, error = EXCLUDED.error, counters = EXCLUDED.counters`,
      [
        record.run_id,
        record.thread_id,
        record.assistant_id,
        record.status,
        JSON.stringify(record.metadata),
        kwargsJson(record),
        record.multitask_strategy,
        record.created_at,
        record.updated_at,
        record.error ?? null,
        JSON.stringify(runCountersOf(record)),
      ],
    );
  }

  async get(runId: string): Promise<RunRecord | null> {
    return toRun((await this.pool.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId])).rows[0]);
  }

  async list(threadId: string, options: RunListOptions = {}): Promise<RunRecord[]> {
    const params: unknown[] = [threadId, options.limit ?? 10, options.offset ?? 0];
    const status = options.status ? `AND status = $${params.push(options.status)}` : "";
    const { rows } = await this.pool.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE thread_id = $1 ${status} ORDER BY created_at DESC, seq DESC LIMIT $2 OFFSET $3`, params);
    return rows.map((r) => toRun(r)!);
  }

  async listByOwner(page: OwnerRunPage): Promise<RunRecord[]> {
    const params: unknown[] = [page.ownerId, page.limit, page.offset];
    const status = page.status ? `AND r.status = $${params.push(page.status)}` : "";
    const columns = RUN_COLUMNS.split(", ").map((c) => `r.${c}`).join(", ");
    const { rows } = await this.pool.query<RunRow>(`SELECT ${columns} ${OWNED_RUNS} ${status} ORDER BY r.created_at DESC, r.seq DESC LIMIT $2 OFFSET $3`, params);
    return rows.map((r) => toRun(r)!);
  }

  async statsByOwner(ownerId: string): Promise<OwnerRunStats> {
    const { rows } = await this.pool.query(
      `SELECT COUNT(*) AS total_runs, COUNT(*) FILTER (WHERE r.status = ANY($2::text[])) AS active_runs,
         COUNT(*) FILTER (WHERE r.status = ANY($3::text[])) AS failed_runs, SUM(${tokens("total_tokens")}) AS total_tokens,
         (SELECT COUNT(*) FROM threads WHERE owner_id = $1) AS total_threads ${OWNED_RUNS}`,
      [ownerId, ACTIVE_RUN_STATUSES, FAILED_RUN_STATUSES],
    );
    const row = rows[0] ?? {};
    return { total_runs: countOf(row.total_runs), active_runs: countOf(row.active_runs), failed_runs: countOf(row.failed_runs), total_tokens: countOf(row.total_tokens), total_threads: countOf(row.total_threads) };
  }

  async usageByOwner(ownerId: string, since?: string): Promise<RunUsageRow[]> {
    const params: unknown[] = [ownerId];
    const from = since ? `AND r.created_at >= $${params.push(since)}` : "";
    const { rows } = await this.pool.query(
      `SELECT r.run_id, r.created_at, r.metadata ->> 'model_name' AS model_name, ${tokens("total_input_tokens")} AS total_input_tokens,
         ${tokens("total_output_tokens")} AS total_output_tokens, ${tokens("total_tokens")} AS total_tokens ${OWNED_RUNS} ${from} ORDER BY r.created_at, r.seq`,
      params,
    );
    return rows.map(usageRow);
  }

  async delete(runId: string): Promise<void> {
    await this.pool.query("DELETE FROM runs WHERE run_id = $1", [runId]);
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.pool.query("DELETE FROM runs WHERE thread_id = $1", [threadId]);
  }

  async interruptOrphans(runIds?: string[]): Promise<number> {
    if (runIds && !runIds.length) return 0;
    const params: unknown[] = [new Date().toISOString()];
    const only = runIds ? `AND run_id = ANY($${params.push(runIds)}::text[])` : "";
    const sql = `UPDATE runs SET status = 'interrupted', updated_at = $1, error = 'Interrupted by a server restart' WHERE status IN ('pending', 'running') ${only}`;
    return (await this.pool.query(sql, params)).rowCount ?? 0;
  }
}
