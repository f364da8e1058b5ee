// The stored event log of each run (DeerFlow runtime/journal.py RunJournal + the run-event store, read by
// `GET /threads/{id}/runs/{run_id}/events`). The stream bridge forgets a run a minute after it ends; this log
// keeps what the run emitted, one JSON line per event, under `<home>/data/run-events/<run_id>.jsonl`.
import { appendFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import type { BridgeItem, StreamBridge, SubscribeOptions } from "../stream-bridge.js";

/** One stored event. `seq` counts from 1 per run; `created_at` is ISO. */
export interface RunEvent {
  seq: number;
  run_id: string;
  event_type: string;
  category: "lifecycle" | "custom" | "update" | "error" | "trace";
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

/** Events of one run held in memory before they are appended to its file in one write. */
const FLUSH_EVERY = 64;

/**
 * Append-only per-run event files. A run's events are buffered in memory and appended in one synchronous write
 * when the run ends (or every {@link FLUSH_EVERY} events), in publication order; {@link list} sees buffered
 * events too. Measured under load: an append per event (open, write, close each time) and an asynchronous append
 * per run (thread-pool round trips) both cost several times one synchronous append per run.
 */
export class RunEventLog {
  private readonly seqs = new Map<string, number>();
  /** Rows not yet written, per run. */
  private readonly pending = new Map<string, RunEvent[]>();
  private dirReady = false;

  /** @param dir Directory holding `<run_id>.jsonl` (created on first write). */
  constructor(private readonly dir: string) {}

  private file(runId: string): string | null {
    return SAFE_ID.test(runId) ? path.join(this.dir, `${runId}.jsonl`) : null;
  }

  /** Stores one event of `runId` unless its type is skipped (token chunks, state copies). */
  record(runId: string, event: string, data: unknown): void {
    if (SKIPPED.test(event)) return;
    if (!this.file(runId)) return;
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    const row: RunEvent = { seq, run_id: runId, event_type: event, category: categoryOf(event), content: data, metadata: {}, created_at: new Date().toISOString() };
    let rows = this.pending.get(runId);
    if (!rows) this.pending.set(runId, (rows = []));
    rows.push(row);
    if (rows.length >= FLUSH_EVERY) this.flush(runId);
  }

  /** Appends the buffered events of `runId`. A failed write drops them: the log is an audit copy and must never break the live stream. */
  private flush(runId: string): void {
    const rows = this.pending.get(runId);
    const file = this.file(runId);
    this.pending.delete(runId);
    if (!rows?.length || !file) return;
    try {
      if (!this.dirReady) {
        mkdirSync(this.dir, { recursive: true });
        this.dirReady = true;
      }
      appendFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    } catch {
      // A full disk must not break the run; the events are lost from the log only.
    }
  }

  /** Writes what is buffered for a finished run and forgets its counter (its file stays). */
  finish(runId: string): void {
    this.seqs.delete(runId);
    this.flush(runId);
  }

  /** Writes everything still buffered (shutdown, tests). */
  drain(): void {
    for (const id of [...this.pending.keys()]) this.flush(id);
  }

  /**
   * The stored events of `runId`, oldest first: optionally only `eventTypes`, only those after `afterSeq`, at most
   * `limit`. A `taskId` keeps custom events whose payload names that task (`task_id`).
   */
  list(runId: string, options: { eventTypes?: string[]; taskId?: string; afterSeq?: number; limit?: number } = {}): RunEvent[] {
    const file = this.file(runId);
    if (!file) return [];
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      // not written yet (buffered) or never
    }
    const stored: RunEvent[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        stored.push(JSON.parse(line) as RunEvent);
      } catch {
        continue; // a torn last line after a crash
      }
    }
    // Buffered rows follow the stored ones.
    const rows = [...stored, ...(this.pending.get(runId) ?? [])];
    const out: RunEvent[] = [];
    for (const row of rows) {
      if (options.afterSeq !== undefined && row.seq <= options.afterSeq) continue;
      if (options.eventTypes && !options.eventTypes.includes(row.event_type)) continue;
      if (options.taskId && (row.content as { task_id?: unknown } | null)?.task_id !== options.taskId) continue;
      out.push(row);
      if (out.length >= (options.limit ?? 500)) break;
    }
    return out;
  }

  /** Deletes the stored events of the given runs (thread deletion). */
  remove(runIds: string[]): void {
    for (const id of runIds) {
      this.pending.delete(id);
      const file = this.file(id);
      if (!file) continue;
      rmSync(file, { force: true });
    }
  }
}

/** A StreamBridge that also writes every published event to a {@link RunEventLog}. */
export class RecordingStreamBridge implements StreamBridge {
  constructor(private readonly inner: StreamBridge, readonly log: RunEventLog) {}

  open(runId: string): void | Promise<void> {
    return this.inner.open(runId);
  }

  publish(runId: string, event: string, data: unknown): string {
    const id = this.inner.publish(runId, event, data);
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
