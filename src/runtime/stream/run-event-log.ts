// The stored event log of each run (DeerFlow runtime/journal.py RunJournal + the run-event store, read by
// `GET /threads/{id}/runs/{run_id}/events`). The stream bridge forgets a run a minute after it ends; this log
// keeps what the run emitted, one row per event, in `<home>/data/run-events.sqlite` (DeerFlow's `db` backend).
// Earlier versions wrote `<home>/data/run-events/<run_id>.jsonl`; those files are still read.
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { openSqlite } from "../persistence/sqlite/sqlite.js";
import type { BridgeItem, StreamBridge, SubscribeOptions } from "./stream-bridge.js";
import { subagentRunEvent } from "./subagent-events.js";

/** One stored event. `seq` counts from 1 per run; `created_at` is ISO. */
export interface RunEvent {
  seq: number;
  run_id: string;
  event_type: string;
  category: "lifecycle" | "custom" | "update" | "error" | "trace" | "workspace" | "subagent";
  content: unknown;
  metadata: Record<string, unknown>;
  created_at: string;
}

/**
 * Events not stored: `messages` (one per streamed token; the finished messages live in the checkpoints) and
 * `values` (a whole state copy per step; the checkpoints hold every step). Everything else is kept.
 */
const SKIPPED = /^(messages|values)(\||$)|^messages\//;

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

const categoryOf = (event: string): RunEvent["category"] =>
  event.startsWith("custom") ? "custom" : event.startsWith("updates") ? "update" : event === "error" ? "error" : event === "metadata" || event === "end" ? "lifecycle" : "trace";

/** Events of one run held in memory before they are written in one transaction. */
const FLUSH_EVERY = 64;

/** Default page size of {@link RunEventLog.list}. */
const DEFAULT_LIMIT = 500;

type Row = { seq: number; run_id: string; event_type: string; category: RunEvent["category"]; content: string; metadata: string; created_at: string };

/**
 * Per-run event log in one SQLite database. A run's events are buffered in memory and written in one transaction
 * when the run ends (or every {@link FLUSH_EVERY} events), in publication order; {@link list} sees buffered events
 * too. Measured under load: one file per run (the earlier JSON Lines layout) cost about 0.4 ms of kernel time per
 * run to create the file, 7% of the gateway's CPU; a row insert into an open database costs a few microseconds.
 * Writes are best-effort: the log is an audit copy and must never break the live stream.
 */
export class RunEventLog {
  private readonly seqs = new Map<string, number>();
  /** Rows not yet written, per run. */
  private readonly pending = new Map<string, RunEvent[]>();
  private db: Database.Database | null = null;
  private insert: ((rows: RunEvent[]) => void) | null = null;

  /**
   * @param dir The data directory: the database is `<dir>.sqlite` next to it (created on first write), and
   *   `<dir>/<run_id>.jsonl` files of earlier versions are read when a run has no rows.
   */
  constructor(
    private readonly dir: string,
    /** `run_events`: `memory` keeps the log in an in-memory database (lost on restart); `maxTraceContent` in bytes. */
    private readonly options: { backend?: "memory" | "db"; maxTraceContent?: number } = {},
  ) {}

  /** The database, opened (and its table created) on first use; null when it cannot be opened. */
  private open(): Database.Database | null {
    if (this.db) return this.db;
    try {
      const memory = this.options.backend === "memory";
      if (!memory) mkdirSync(path.dirname(this.dir), { recursive: true });
      const db = openSqlite(memory ? ":memory:" : `${this.dir}.sqlite`);
      db.exec(`CREATE TABLE IF NOT EXISTS run_events (
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, category TEXT NOT NULL,
        content TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID`);
      const statement = db.prepare("INSERT OR REPLACE INTO run_events (run_id, seq, event_type, category, content, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
      this.insert = db.transaction((rows: RunEvent[]) => {
        for (const r of rows) statement.run(r.run_id, r.seq, r.event_type, r.category, JSON.stringify(r.content ?? null), JSON.stringify(r.metadata), r.created_at);
      });
      this.db = db;
      return db;
    } catch {
      return null;
    }
  }

  /**
   * Stores one event of `runId` unless its type is skipped (token chunks, state copies). A subagent's `task_*`
   * custom chunk also stores its DeerFlow catalog event (`subagent.start|step|end`, subagent-events.ts), in the same
   * buffered batch.
   */
  record(runId: string, event: string, data: unknown): void {
    if (SKIPPED.test(event)) return;
    if (!SAFE_ID.test(runId)) return;
    const catalog = event.startsWith("custom") ? subagentRunEvent(data) : null;
    if (catalog) this.append(runId, catalog);
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    const category = categoryOf(event);
    const row: RunEvent = { seq, run_id: runId, event_type: event, category, content: category === "trace" ? this.capTrace(data) : data, metadata: {}, created_at: new Date().toISOString() };
    let rows = this.pending.get(runId);
    if (!rows) this.pending.set(runId, (rows = []));
    rows.push(row);
    if (rows.length >= FLUSH_EVERY) this.flush(runId);
  }

  /**
   * Stores one event the run did not stream (a `workspace_changes` record: DeerFlow's event-store `put`), in the run's
   * sequence. Call before the run's `finish` so it is written with the run's other events.
   */
  append(runId: string, event: { event_type: string; category: string; content: unknown; metadata: Record<string, unknown> }): void {
    if (!SAFE_ID.test(runId)) return;
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    let rows = this.pending.get(runId);
    if (!rows) this.pending.set(runId, (rows = []));
    rows.push({ seq, run_id: runId, event_type: event.event_type, category: event.category as RunEvent["category"], content: event.content, metadata: event.metadata, created_at: new Date().toISOString() });
  }

  /** A trace event's content, or a preview of it when its JSON is over `run_events.max_trace_content` bytes. */
  private capTrace(data: unknown): unknown {
    const max = this.options.maxTraceContent;
    if (max === undefined) return data;
    const text = JSON.stringify(data ?? null);
    if (Buffer.byteLength(text) <= max) return data;
    return { truncated: true, bytes: Buffer.byteLength(text), preview: Buffer.from(text).subarray(0, max).toString("utf8").replace(/\uFFFD$/, "") };
  }

  /** Writes the buffered events of `runId`. A failed write drops them (a full disk must not break the run). */
  private flush(runId: string): void {
    const rows = this.pending.get(runId);
    this.pending.delete(runId);
    if (!rows?.length || !this.open()) return;
    try {
      this.insert!(rows);
    } catch {
      // The events are lost from the log only.
    }
  }

  /** Writes what is buffered for a finished run and forgets its counter. */
  finish(runId: string): void {
    this.seqs.delete(runId);
    this.flush(runId);
  }

  /** Writes everything still buffered (shutdown, tests). */
  drain(): void {
    for (const id of [...this.pending.keys()]) this.flush(id);
  }

  /** Writes what is buffered and closes the database (shutdown). */
  close(): void {
    this.drain();
    this.db?.close();
    this.db = null;
    this.insert = null;
  }

  /**
   * The stored events of `runId`, oldest first: optionally only `eventTypes`, only those after `afterSeq`, at most
   * `limit` (default 500). A `taskId` keeps custom events whose payload names that task (`task_id`).
   */
  list(runId: string, options: { eventTypes?: string[]; taskId?: string; afterSeq?: number; limit?: number } = {}): RunEvent[] {
    if (!SAFE_ID.test(runId)) return [];
    // Buffered rows follow the stored ones.
    const rows = [...this.stored(runId), ...(this.pending.get(runId) ?? [])];
    const out: RunEvent[] = [];
    for (const row of rows) {
      if (options.afterSeq !== undefined && row.seq <= options.afterSeq) continue;
      if (options.eventTypes && !options.eventTypes.includes(row.event_type)) continue;
      if (options.taskId && ((row.content as { task_id?: unknown } | null)?.task_id ?? row.metadata?.task_id) !== options.taskId) continue;
      out.push(row);
      if (out.length >= (options.limit ?? DEFAULT_LIMIT)) break;
    }
    return out;
  }

  /** The written events of `runId`: database rows, else the run's JSON Lines file from an earlier version. */
  private stored(runId: string): RunEvent[] {
    const db = this.open();
    const rows = db ? (db.prepare("SELECT * FROM run_events WHERE run_id = ? ORDER BY seq").all(runId) as Row[]) : [];
    if (rows.length) return rows.map((r) => ({ ...r, content: JSON.parse(r.content) as unknown, metadata: JSON.parse(r.metadata) as Record<string, unknown> }));
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

  /** Deletes the stored events of the given runs (thread deletion). */
  remove(runIds: string[]): void {
    const db = this.open();
    for (const id of runIds) {
      this.pending.delete(id);
      this.seqs.delete(id);
      if (!SAFE_ID.test(id)) continue;
      db?.prepare("DELETE FROM run_events WHERE run_id = ?").run(id);
      rmSync(path.join(this.dir, `${id}.jsonl`), { force: true });
    }
  }
}

/** A StreamBridge that also writes every published event to a {@link RunEventLog}. */
export class RecordingStreamBridge implements StreamBridge {
  constructor(private readonly inner: StreamBridge, readonly log: RunEventLog) {}

  open(runId: string): void | Promise<void> {
    return this.inner.open(runId);
  }

  async reopen(runId: string): Promise<void> {
    await this.inner.reopen?.(runId);
  }

  publish(runId: string, event: string, data: unknown, json?: string): string {
    const id = this.inner.publish(runId, event, data, json);
    try {
      this.log.record(runId, event, data);
    } catch {
      // A full disk must not break the live stream; the log is an audit copy.
    }
    return id;
  }

  publishEnd(runId: string): void {
    this.log.finish(runId);
    this.inner.publishEnd(runId);
  }

  subscribe(runId: string, options?: SubscribeOptions): AsyncIterable<BridgeItem> {
    return this.inner.subscribe(runId, options);
  }

  exists(runId: string): boolean {
    return this.inner.exists(runId);
  }

  cleanup(runId: string, delayMs: number): void {
    this.inner.cleanup(runId, delayMs);
  }

  close(): void | Promise<void> {
    return this.inner.close();
  }
}
