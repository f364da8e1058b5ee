// The run table: finished and in-flight run records, durable next to the threads and checkpoints.
import type Database from "better-sqlite3";
import type { RunListOptions, RunRepository } from "../repositories.js";
import type { RunRecord } from "../repositories.js";
import type { RunStatus } from "../../wire/wire-enums.js";
import { kwargsJson, runCountersOf } from "../../runs/run-counters.js";
import { commitWith, type GroupCommit } from "./group-commit.js";
import { StatementCache } from "./statement-cache.js";
import { ACTIVE_RUN_STATUSES, countOf, FAILED_RUN_STATUSES, type OwnerRunPage, type OwnerRunStats, type RunUsageRow, usageRow } from "../owner-runs.js";

const inList = (values: readonly string[]) => values.map((v) => `'${v}'`).join(", ");
/** The runs of one owner's threads (`?` = the owner id). */
const OWNED_RUNS = "FROM runs r JOIN threads t ON t.thread_id = r.thread_id WHERE t.owner_id = ?";

interface Row {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: string;
  kwargs: string;
  multitask_strategy: RunRecord["multitask_strategy"];
  created_at: string;
  updated_at: string;
  error: string | null;
  counters: string;
}

export type { RunListOptions };

/**
 * Run records in a better-sqlite3 database. Each call is atomic within the process. With a {@link GroupCommit} the
 * writes join the connection's group commit (each call answered once its write is committed, reads commit the
 * queue first); without one each write commits at once.
 */
export class RunStore implements RunRepository {
  private readonly statements: StatementCache;

  /**
   * @param db The connection; the `runs` table is created (and migrated) here.
   * @param commits The connection's write queue, shared with the other stores on `db`.
   */
  constructor(
    db: Database.Database,
    private readonly commits?: GroupCommit,
  ) {
    this.statements = new StatementCache(db);
    db.exec(`CREATE TABLE IF NOT EXISTS runs (
      run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL, status TEXT NOT NULL,
      metadata TEXT NOT NULL, kwargs TEXT NOT NULL, multitask_strategy TEXT NOT NULL,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT);
      CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, created_at)`);
    // Databases created before the run counters existed get the column (older rows read as all zero).
    const columns = db.prepare("PRAGMA table_info(runs)").all() as { name: string }[];
    if (!columns.some((c) => c.name === "counters")) db.exec("ALTER TABLE runs ADD COLUMN counters TEXT NOT NULL DEFAULT '{}'");
  }

  private static toRecord(row: Row | undefined): RunRecord | null {
    if (!row) return null;
    const { error, counters, ...rest } = row;
    return { ...rest, metadata: JSON.parse(row.metadata), kwargs: JSON.parse(row.kwargs), ...runCountersOf(counters), ...(error !== null ? { error } : {}) };
  }

  /**
   * Inserts a run record, or updates the stored one (status, metadata, updated_at, error, counters). `kwargs` (the
   * request's input and config) are written with the row and never change: a status update does not rewrite them.
   */
  async save(record: RunRecord): Promise<void> {
    // The row as the record is now: the caller goes on changing the record while the write waits for its group.
    const row = {
      run_id: record.run_id,
      thread_id: record.thread_id,
      assistant_id: record.assistant_id,
      status: record.status,
      multitask_strategy: record.multitask_strategy,
      created_at: record.created_at,
      updated_at: record.updated_at,
      metadata: JSON.stringify(record.metadata),
      kwargs: kwargsJson(record),
      error: record.error ?? null,
      counters: JSON.stringify(runCountersOf(record)),
    };
    await commitWith(this.commits, () => {
      this.statements
        // An upsert, not INSERT OR REPLACE: a status change updates the row in place (REPLACE deletes and re-inserts
        // it, with index upkeep twice and a new rowid, which is the list's tie-break).
        .get(`INSERT INTO runs (run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, created_at, updated_at, error, counters)
          VALUES (@run_id, @thread_id, @assistant_id, @status, @metadata, @kwargs, @multitask_strategy, @created_at, @updated_at, @error, @counters)
          ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, metadata = excluded.metadata,
            updated_at = excluded.updated_at, error = excluded.error, counters = excluded.counters`)
        .run(row);
    });
  }

  /** The run, or null. */
  async get(runId: string): Promise<RunRecord | null> {
    this.commits?.flush();
    return RunStore.toRecord(this.statements.get("SELECT * FROM runs WHERE run_id = ?").get(runId) as Row | undefined);
  }

  /** Runs of a thread, newest first. */
  async list(threadId: string, options: RunListOptions = {}): Promise<RunRecord[]> {
    this.commits?.flush();
    const rows = this.statements
      .get(`SELECT * FROM runs WHERE thread_id = ? ${options.status ? "AND status = ?" : ""} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
      .all(...[threadId, ...(options.status ? [options.status] : []), options.limit ?? 10, options.offset ?? 0]) as Row[];
    return rows.map((r) => RunStore.toRecord(r)!);
  }

  /** One page of `ownerId`'s runs across their threads, newest first (the console's run list). */
  async listByOwner(page: OwnerRunPage): Promise<RunRecord[]> {
    this.commits?.flush();
    const rows = this.statements
      .get(`SELECT r.* ${OWNED_RUNS} ${page.status ? "AND r.status = ?" : ""} ORDER BY r.created_at DESC, r.rowid DESC LIMIT ? OFFSET ?`)
      .all(...[page.ownerId, ...(page.status ? [page.status] : []), page.limit, page.offset]) as Row[];
    return rows.map((r) => RunStore.toRecord(r)!);
  }

  /** Counters over all of `ownerId`'s runs (one aggregate statement). */
  async statsByOwner(ownerId: string): Promise<OwnerRunStats> {
    this.commits?.flush();
    const row = this.statements
      .get(`SELECT COUNT(*) AS total_runs, SUM(r.status IN (${inList(ACTIVE_RUN_STATUSES)})) AS active_runs,
        SUM(r.status IN (${inList(FAILED_RUN_STATUSES)})) AS failed_runs,
        SUM(COALESCE(json_extract(r.counters, '$.total_tokens'), 0)) AS total_tokens,
        (SELECT COUNT(*) FROM threads WHERE owner_id = @owner) AS total_threads
        FROM runs r JOIN threads t ON t.thread_id = r.thread_id WHERE t.owner_id = @owner`)
      .get({ owner: ownerId }) as Record<keyof OwnerRunStats, unknown>;
    return { total_runs: countOf(row.total_runs), active_runs: countOf(row.active_runs), failed_runs: countOf(row.failed_runs), total_tokens: countOf(row.total_tokens), total_threads: countOf(row.total_threads) };
  }

  /** Usage rows of `ownerId`'s runs created at or after `since` (all when omitted), oldest first. */
  async usageByOwner(ownerId: string, since?: string): Promise<RunUsageRow[]> {
    this.commits?.flush();
    const rows = this.statements
      .get(`SELECT r.run_id, r.created_at, json_extract(r.metadata, '$.model_name') AS model_name,
        json_extract(r.counters, '$.total_input_tokens') AS total_input_tokens, json_extract(r.counters, '$.total_output_tokens') AS total_output_tokens,
        json_extract(r.counters, '$.total_tokens') AS total_tokens ${OWNED_RUNS} ${since ? "AND r.created_at >= ?" : ""} ORDER BY r.created_at, r.rowid`)
      .all(...[ownerId, ...(since ? [since] : [])]) as Record<keyof RunUsageRow, unknown>[];
    return rows.map(usageRow);
  }

  /** Deletes one run. */
  async delete(runId: string): Promise<void> {
    await commitWith(this.commits, () => this.statements.get("DELETE FROM runs WHERE run_id = ?").run(runId));
  }

  /** Deletes a thread's runs. */
  async deleteThread(threadId: string): Promise<void> {
    await commitWith(this.commits, () => this.statements.get("DELETE FROM runs WHERE thread_id = ?").run(threadId));
  }

  /**
   * Marks runs left `pending` or `running` by a previous process (or only `runIds`) as `interrupted` (they
   * cannot be resumed).
   * @returns how many were marked.
   */
  async interruptOrphans(runIds?: string[]): Promise<number> {
    if (runIds && !runIds.length) return 0;
    const only = runIds ? `AND run_id IN (${runIds.map(() => "?").join(",")})` : "";
    const now = new Date().toISOString();
    return commitWith(
      this.commits,
      () =>
        this.statements
          .get(`UPDATE runs SET status = 'interrupted', updated_at = ?, error = 'Interrupted by a server restart' WHERE status IN ('pending', 'running') ${only}`)
          .run(now, ...(runIds ?? [])).changes,
    );
  }
}
