// Run event logs written by earlier gateway versions, read (never written) when the gateway database holds no
// events for a run: `<home>/data/run-events.sqlite` (one database per process) and, before it,
// `<home>/data/run-events/<run_id>.jsonl`. They are not copied into the gateway database: they are per-process
// audit copies, and a run either has rows in the new table or only in these files.
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import { openSqlite } from "../persistence/sqlite/sqlite.js";
import { fromRow, typeMatches, type RunEvent, type RunEventQuery, type RunEventRow } from "../persistence/run-event-store.js";

/** The earlier logs under `dir` (`<home>/data/run-events`): its `.sqlite` sibling and its `.jsonl` files. */
export class LegacyRunEvents {
  private db: Database.Database | null | undefined;

  constructor(private readonly dir: string) {}

  /** The old database, opened on first use; null when there is none. */
  private open(): Database.Database | null {
    if (this.db !== undefined) return this.db;
    const file = `${this.dir}.sqlite`;
    try {
      this.db = existsSync(file) ? openSqlite(file) : null;
    } catch {
      this.db = null;
    }
    return this.db;
  }

  /** The run's earlier events matching `query` (the old rows' `task_id` was the content's or the metadata's). */
  list(runId: string, query: RunEventQuery): RunEvent[] {
    const out: RunEvent[] = [];
    for (const row of this.read(runId)) {
      if (query.afterSeq !== undefined && row.seq <= query.afterSeq) continue;
      if (!typeMatches(row.event_type, query.eventTypes)) continue;
      if (query.taskId !== undefined && ((row.content as { task_id?: unknown } | null)?.task_id ?? row.metadata?.task_id) !== query.taskId) continue;
      out.push(row);
      if (out.length >= query.limit) break;
    }
    return out;
  }

  private read(runId: string): RunEvent[] {
    const db = this.open();
    try {
      const rows = db ? (db.prepare("SELECT * FROM run_events WHERE run_id = ? ORDER BY seq").all(runId) as RunEventRow[]) : [];
      if (rows.length) return rows.map(fromRow);
    } catch {
      // Not the old table: nothing to read.
    }
    let text = "";
    try {
      text = readFileSync(path.join(this.dir, `${runId}.jsonl`), "utf8");
    } catch {
      return [];
    }
    const out: RunEvent[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as RunEvent);
      } catch {
        continue; // a torn last line after a crash
      }
    }
    return out;
  }

  /** Deletes the runs' earlier events. */
  remove(runIds: string[]): void {
    const db = this.open();
    for (const id of runIds) {
      try {
        db?.prepare("DELETE FROM run_events WHERE run_id = ?").run(id);
      } catch {
        // Not the old table.
      }
      rmSync(path.join(this.dir, `${id}.jsonl`), { force: true });
    }
  }

  close(): void {
    this.db?.close();
    this.db = undefined;
  }
}
