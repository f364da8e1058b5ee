// The `run_events` table in the gateway's SQLite database (DeerFlow DbRunEventStore on SQLite): a run's events
// next to its run row, written through the connection's group commit.
import type Database from "better-sqlite3";
import { fromRow, listSql, taskIdOf, type RunEvent, type RunEventQuery, type RunEventRow, type RunEventStore } from "../run-event-store.js";
import { commitWith, type GroupCommit } from "./group-commit.js";

/**
 * Run events in a better-sqlite3 database. With a {@link GroupCommit} a batch joins the connection's next group
 * (the run's end writes its events, its status and its thread's release in one commit); reads commit the queue
 * first. Without one (the in-memory `run_events.backend: memory` database) each batch commits at once.
 */
export class SqliteRunEventStore implements RunEventStore {
  private readonly insert: Database.Statement;

  /**
   * @param db The connection; the `run_events` table is created here (`CREATE TABLE IF NOT EXISTS`).
   * @param commits The connection's write queue, shared with the other stores on `db`.
   */
  constructor(
    private readonly db: Database.Database,
    private readonly commits?: GroupCommit,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS run_events (
      run_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, category TEXT NOT NULL,
      content TEXT NOT NULL, metadata TEXT NOT NULL, task_id TEXT, created_at TEXT NOT NULL,
      PRIMARY KEY (run_id, seq)) WITHOUT ROWID`);
    this.insert = db.prepare("INSERT OR REPLACE INTO run_events (run_id, seq, event_type, category, content, metadata, task_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  }

  putBatch(rows: RunEvent[]): Promise<void> {
    const write = () => {
      for (const r of rows) this.insert.run(r.run_id, r.seq, r.event_type, r.category, JSON.stringify(r.content ?? null), JSON.stringify(r.metadata ?? {}), taskIdOf(r.metadata), r.created_at);
    };
    // A group's writes already share a transaction; alone, the batch takes one of its own.
    return commitWith(this.commits, this.commits ? write : () => this.db.transaction(write)());
  }

  async list(runId: string, query: RunEventQuery): Promise<RunEvent[]> {
    this.commits?.flush();
    const { sql, params } = listSql(runId, query);
    return (this.db.prepare(sql).all(...params) as RunEventRow[]).map(fromRow);
  }

  async maxSeq(runId: string): Promise<number> {
    this.commits?.flush();
    const row = this.db.prepare("SELECT MAX(seq) AS seq FROM run_events WHERE run_id = ?").get(runId) as { seq: number | null };
    return row.seq ?? 0;
  }

  deleteRuns(runIds: string[]): Promise<void> {
    const del = this.db.prepare("DELETE FROM run_events WHERE run_id = ?");
    return commitWith(this.commits, () => {
      for (const id of runIds) del.run(id);
    });
  }
}
