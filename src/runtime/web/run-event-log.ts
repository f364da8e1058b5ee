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

/** Append-only per-run event files. Synchronous appends keep the order of publication. */
export class RunEventLog {
  private readonly seqs = new Map<string, number>();

  /** @param dir Directory holding `<run_id>.jsonl` (created on first write). */
  constructor(private readonly dir: string) {}

  private file(runId: string): string | null {
    return SAFE_ID.test(runId) ? path.join(this.dir, `${runId}.jsonl`) : null;
  }

  /** Stores one event of `runId` unless its type is skipped (token chunks, state copies). */
  record(runId: string, event: string, data: unknown): void {
    if (SKIPPED.test(event)) return;
    const file = this.file(runId);
    if (!file) return;
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    const row: RunEvent = { seq, run_id: runId, event_type: event, category: categoryOf(event), content: data, metadata: {}, created_at: new Date().toISOString() };
    mkdirSync(this.dir, { recursive: true });
    appendFileSync(file, `${JSON.stringify(row)}\n`);
  }

  /** Forgets the in-memory counter of a finished run (its file stays). */
  finish(runId: string): void {
    this.seqs.delete(runId);
  }

  /**
   * The stored events of `runId`, oldest first: optionally only `eventTypes`, only those after `afterSeq`, at most
   * `limit`. A `taskId` keeps custom events whose payload names that task (`task_id`).
   */
  list(runId: string, options: { eventTypes?: string[]; taskId?: string; afterSeq?: number; limit?: number } = {}): RunEvent[] {
    const file = this.file(runId);
    if (!file) return [];
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      return [];
    }
    const out: RunEvent[] = [];
    for (const line of text.split("\n")) {
      if (!line) continue;
      let row: RunEvent;
      try {
        row = JSON.parse(line) as RunEvent;
      } catch {
        continue; // a torn last line after a crash
      }
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
      const file = this.file(id);
      if (file) rmSync(file, { force: true });
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
