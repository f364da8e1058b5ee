// The stored run events (DeerFlow runtime/events/store/base.py RunEventStore): the row shape, the query of
// `GET /threads/{id}/runs/{run_id}/events`, and the repository interface the SQLite (sqlite/run-event-store.ts) and
// PostgreSQL (postgres/pg-run-event-store.ts) tables implement. The run's event log (stream/run-event-log.ts)
// buffers a run's events and writes them here in batches.

/** Category of a stored event: upstream's catalog (`trace`, `outputs`, `error`, `message`, `middleware`, ...) or the gateway's SSE copies. */
export type RunEventCategory = string;

/** One stored event. `seq` counts from 1 per run; `created_at` is ISO 8601; content and metadata are JSON values. */
export interface RunEvent {
  seq: number;
  run_id: string;
  event_type: string;
  category: RunEventCategory;
  content: unknown;
  metadata: Record<string, unknown>;
  created_at: string;
}

/**
 * Filters of {@link RunEventStore.list} (upstream `list_events`). `eventTypes`: exact types, or a prefix ending in
 * `*` (`middleware:*`, `llm.*`: a gateway extension); `taskId`: events whose `metadata.task_id` is it; `afterSeq`:
 * only events after that seq (the forward cursor); `limit`: at most that many, oldest first.
 */
export interface RunEventQuery {
  eventTypes?: string[];
  taskId?: string;
  afterSeq?: number;
  limit: number;
}

/**
 * Where run events are kept. Writes come in batches of one run (a run's events are written when it ends, or every
 * few dozen events); seqs are assigned by the writer, so a batch never collides with another process's rows.
 */
export interface RunEventStore {
  /** Writes the rows (one transaction); a row whose (run_id, seq) exists replaces it. @throws the database error. */
  putBatch(rows: RunEvent[]): Promise<void>;
  /** The run's events matching `query`, by seq ascending. */
  list(runId: string, query: RunEventQuery): Promise<RunEvent[]>;
  /** The highest stored seq of the run (0 when none): where a resumed run's numbering continues. */
  maxSeq(runId: string): Promise<number>;
  /** Deletes the stored events of the runs. */
  deleteRuns(runIds: string[]): Promise<void>;
}

/** Longest event type a row may carry (upstream RUN_EVENT_TYPE_MAX_LENGTH is 64; the column is TEXT here). */
export const EVENT_TYPE_MAX_LENGTH = 128;

/** The `metadata.task_id` a row is filtered by (`?task_id=`), stored in a column of its own. */
export const taskIdOf = (metadata: Record<string, unknown> | null | undefined): string | null => (typeof metadata?.task_id === "string" ? metadata.task_id : null);

/** Whether `type` matches one of the filters (an exact type, or a `prefix*`). Undefined or empty filters match all. */
export function typeMatches(type: string, filters: string[] | undefined): boolean {
  if (!filters?.length) return true;
  return filters.some((f) => (f.endsWith("*") ? type.startsWith(f.slice(0, -1)) : type === f));
}

/**
 * The SQL condition for `eventTypes` with `?` placeholders and its parameters: exact types by `IN`, prefixes by
 * `LIKE` with `\` escaping (`_` and `%` in a type are literal). Empty when there is no filter.
 */
export function typeCondition(eventTypes: string[] | undefined): { sql: string; params: string[] } {
  if (!eventTypes?.length) return { sql: "", params: [] };
  const exact = eventTypes.filter((t) => !t.endsWith("*"));
  const prefixes = eventTypes.filter((t) => t.endsWith("*")).map((t) => `${t.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  const parts: string[] = [];
  if (exact.length) parts.push(`event_type IN (${exact.map(() => "?").join(", ")})`);
  for (let i = 0; i < prefixes.length; i++) parts.push("event_type LIKE ? ESCAPE '\\'");
  return { sql: `(${parts.join(" OR ")})`, params: [...exact, ...prefixes] };
}

/** A row as both databases return it (JSON as text). */
export interface RunEventRow {
  run_id: string;
  seq: number | string;
  event_type: string;
  category: string;
  content: string;
  metadata: string;
  created_at: string;
}

/** A database row as a {@link RunEvent}. */
export const fromRow = (r: RunEventRow): RunEvent => ({
  seq: Number(r.seq),
  run_id: r.run_id,
  event_type: r.event_type,
  category: r.category,
  content: JSON.parse(r.content) as unknown,
  metadata: JSON.parse(r.metadata) as Record<string, unknown>,
  created_at: r.created_at,
});

/** The SELECT of {@link RunEventStore.list} with `?` placeholders (LIMIT last), and its parameters. */
export function listSql(runId: string, query: RunEventQuery): { sql: string; params: unknown[] } {
  const where = ["run_id = ?"];
  const params: unknown[] = [runId];
  const types = typeCondition(query.eventTypes);
  if (types.sql) {
    where.push(types.sql);
    params.push(...types.params);
  }
  if (query.taskId !== undefined) {
    where.push("task_id = ?");
    params.push(query.taskId);
  }
  if (query.afterSeq !== undefined) {
    where.push("seq > ?");
    params.push(query.afterSeq);
  }
  params.push(query.limit);
  return { sql: `SELECT run_id, seq, event_type, category, content, metadata, created_at FROM run_events WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`, params };
}
