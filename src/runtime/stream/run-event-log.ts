// The event log of each run (DeerFlow runtime/journal.py RunJournal's buffer + the run-event store, read by
// `GET /threads/{id}/runs/{run_id}/events`). The stream bridge forgets a run a minute after it ends; this log keeps
// what the run emitted, one row per event, in the gateway database (`run_events`: the SQLite file of the runs and
// threads, or PostgreSQL when `database.backend: postgres`, so every process reads every run's events).
import type { RunEvent, RunEventQuery, RunEventStore } from "../persistence/run-event-store.js";
import { typeMatches } from "../persistence/run-event-store.js";
import type { BridgeItem, StreamBridge, SubscribeOptions } from "./stream-bridge.js";
import { LegacyRunEvents } from "./legacy-run-events.js";
import { subagentRunEvent } from "./subagent-events.js";

export type { RunEvent } from "../persistence/run-event-store.js";

/**
 * Events not stored: `messages` (one per streamed token; the finished messages live in the checkpoints and in the
 * journal's `llm.ai.response`) and `values` (a whole state copy per step; the checkpoints hold every step).
 */
const SKIPPED = /^(messages|values)(\||$)|^messages\//;

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

const categoryOf = (event: string): string =>
  event.startsWith("custom") ? "custom" : event.startsWith("updates") ? "update" : event === "error" ? "error" : event === "metadata" || event === "end" ? "lifecycle" : "trace";

/** Events of one run held in memory before they are written in one batch (upstream's journal flushes at 20). */
export const FLUSH_EVERY = 64;

/** Default page size of {@link RunEventLog.list} (upstream's `limit` default). */
const DEFAULT_LIMIT = 500;

/** Options of {@link RunEventLog}. */
export interface RunEventLogOptions {
  /** `run_events.max_trace_content`: a trace event whose JSON is larger (bytes) is stored as a preview. */
  maxTraceContent?: number;
  /** `<home>/data/run-events`: earlier versions' logs (`.sqlite` beside it, `.jsonl` in it), read when a run has no rows. */
  legacyDir?: string;
}

/**
 * Per-run event log over a {@link RunEventStore}. A run's events are numbered and buffered in memory, and written in
 * one batch when the run ends (or every {@link FLUSH_EVERY} events), so a run costs one write, not one per event:
 * on SQLite the batch joins the group commit of the run's final status. {@link list} sees the events this process
 * has not written yet. Writes are best-effort: the log must never break the live stream; a failed batch is lost
 * from the log only.
 */
export class RunEventLog {
  private readonly seqs = new Map<string, number>();
  /** Rows not yet handed to the store, per run. */
  private readonly pending = new Map<string, RunEvent[]>();
  /** Rows handed to the store whose write has not settled: still listed from here. */
  private readonly writing = new Map<string, Set<RunEvent[]>>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly legacy: LegacyRunEvents | null;

  constructor(
    private readonly store: RunEventStore,
    private readonly options: RunEventLogOptions = {},
  ) {
    this.legacy = options.legacyDir ? new LegacyRunEvents(options.legacyDir) : null;
  }

  /**
   * Stores one published event of `runId` unless its type is skipped (token chunks, state copies). A subagent's
   * `task_*` custom chunk also stores its DeerFlow catalog event (`subagent.start|step|end`, subagent-events.ts),
   * in the same buffered batch.
   */
  record(runId: string, event: string, data: unknown): void {
    if (SKIPPED.test(event)) return;
    const catalog = event.startsWith("custom") ? subagentRunEvent(data) : null;
    if (catalog) this.append(runId, catalog);
    const category = categoryOf(event);
    this.append(runId, { event_type: event, category, content: category === "trace" ? this.capTrace(data) : data, metadata: {} });
  }

  /**
   * Stores one event the run did not stream (the journal's `run.*`, `llm.*`, `middleware:*`; a `workspace_changes`
   * record: DeerFlow's event-store `put`), next in the run's sequence. Call before the run's {@link finish}.
   */
  append(runId: string, event: { event_type: string; category: string; content: unknown; metadata: Record<string, unknown> }): void {
    if (!SAFE_ID.test(runId)) return;
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    let rows = this.pending.get(runId);
    if (!rows) this.pending.set(runId, (rows = []));
    rows.push({ seq, run_id: runId, event_type: event.event_type, category: event.category, content: event.content, metadata: event.metadata, created_at: new Date().toISOString() });
    if (rows.length >= FLUSH_EVERY) this.flush(runId);
  }

  /**
   * Continues a resumed run's numbering after what the store holds (another process ran it first), so its new
   * events never replace the stored ones. Never throws.
   */
  async reopen(runId: string): Promise<void> {
    if (!SAFE_ID.test(runId)) return;
    const stored = await this.store.maxSeq(runId).catch(() => 0);
    this.seqs.set(runId, Math.max(stored, this.seqs.get(runId) ?? 0));
  }

  /** A trace event's content, or a preview of it when its JSON is over `run_events.max_trace_content` bytes. */
  private capTrace(data: unknown): unknown {
    const max = this.options.maxTraceContent;
    if (max === undefined) return data;
    const text = JSON.stringify(data ?? null);
    if (Buffer.byteLength(text) <= max) return data;
    return { truncated: true, bytes: Buffer.byteLength(text), preview: Buffer.from(text).subarray(0, max).toString("utf8").replace(/\uFFFD$/, "") };
  }

  /** Hands the buffered events of `runId` to the store; they stay listed from memory until the write settles. */
  private flush(runId: string): void {
    const rows = this.pending.get(runId);
    this.pending.delete(runId);
    if (!rows?.length) return;
    let batches = this.writing.get(runId);
    if (!batches) this.writing.set(runId, (batches = new Set()));
    batches.add(rows);
    const write = this.store
      .putBatch(rows)
      .catch(() => undefined) // lost from the log only: a full disk or a lost database must not break the run
      .finally(() => {
        batches.delete(rows);
        if (!batches.size && this.writing.get(runId) === batches) this.writing.delete(runId);
        this.inFlight.delete(write);
      });
    this.inFlight.add(write);
  }

  /** Writes what is buffered for a finished run and forgets its counter. */
  finish(runId: string): void {
    this.seqs.delete(runId);
    this.flush(runId);
  }

  /** Writes everything still buffered and waits for every write (shutdown, tests). */
  async drain(): Promise<void> {
    for (const id of [...this.pending.keys()]) this.flush(id);
    await Promise.all([...this.inFlight]);
  }

  /** Writes what is buffered and closes the earlier versions' database (shutdown; the store closes with persistence). */
  async close(): Promise<void> {
    await this.drain();
    this.legacy?.close();
  }

  /**
   * The events of `runId`, oldest first: optionally only `eventTypes` (exact, or `prefix*`), only those whose
   * `metadata.task_id` is `taskId`, only those after `afterSeq`, at most `limit` (default 500). Includes the events
   * of a run on this process not written yet; a run of another process shows what it has written (at its end, or
   * every {@link FLUSH_EVERY} events). An unknown or malformed run id has none.
   */
  async list(runId: string, options: Partial<RunEventQuery> = {}): Promise<RunEvent[]> {
    if (!SAFE_ID.test(runId)) return [];
    const query: RunEventQuery = { ...options, limit: options.limit ?? DEFAULT_LIMIT };
    const local = [...(this.writing.get(runId) ?? [])].flat().concat(this.pending.get(runId) ?? []).filter((row) => this.matches(row, query));
    const stored = await this.store.list(runId, query).catch(() => [] as RunEvent[]);
    if (!stored.length && !local.length && this.legacy) return this.legacy.list(runId, query);
    const bySeq = new Map<number, RunEvent>();
    for (const row of [...stored, ...local]) bySeq.set(row.seq, row);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(0, query.limit);
  }

  private matches(row: RunEvent, query: RunEventQuery): boolean {
    if (query.afterSeq !== undefined && row.seq <= query.afterSeq) return false;
    if (!typeMatches(row.event_type, query.eventTypes)) return false;
    return query.taskId === undefined || row.metadata?.task_id === query.taskId;
  }

  /** Deletes the stored events of the given runs (thread deletion). */
  async remove(runIds: string[]): Promise<void> {
    const safe = runIds.filter((id) => SAFE_ID.test(id));
    for (const id of runIds) {
      this.pending.delete(id);
      this.seqs.delete(id);
    }
    await this.store.deleteRuns(safe).catch(() => undefined);
    this.legacy?.remove(safe);
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
    await this.log.reopen(runId);
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
