// The durable MCP task table (DeerFlow persistence/mcp_tasks): one row per submitted remote job, its poll schedule,
// last known state and the delivery of its result back into the thread. The SQL is shared by the SQLite file
// (sqlite-task-store.ts) and PostgreSQL (pg-task-store.ts); only the claim's row lock differs.

/** Upstream's normalized task states. */
export type McpTaskStatus = "submitted" | "working" | "input_required" | "completed" | "failed" | "cancelled";
/** States the poller keeps asking about. */
export const POLLABLE: readonly McpTaskStatus[] = ["submitted", "working", "input_required"];

/**
 * Where a task's update stands on its way into the thread (upstream's notification states): null (nothing to
 * tell), `pending` (a run is to be started), `dispatched` (the run started, not finished), `retry` (the run failed
 * or could not start, tried again later), `delivered`, `dead_letter` (given up, reason in `notification_error`).
 */
export type NotificationStatus = "pending" | "dispatched" | "retry" | "delivered" | "dead_letter";

/** One task row. Timestamps are ISO strings, `*_at` numbers epoch ms; `result` and `input_required` are parsed JSON. */
export interface McpTaskRecord {
  id: string;
  user_id: string;
  thread_id: string;
  server_name: string;
  task_name: string;
  remote_task_id: string;
  /** The toolset's raw tool names: `{submit_tool, status_tool, cancel_tool}`. */
  driver_data: Record<string, string>;
  status: McpTaskStatus;
  result: unknown;
  result_preview: string | null;
  result_truncated: boolean;
  result_artifact: Record<string, string> | null;
  input_required: Record<string, unknown> | null;
  error: string | null;
  last_poll_error: string | null;
  last_cancel_error: string | null;
  consecutive_poll_error_count: number;
  cancel_attempt_count: number;
  cancel_requested_at: string | null;
  last_polled_at: string | null;
  /** Epoch ms of the next status call (null: not polled). */
  next_poll_at: number | null;
  notification_status: NotificationStatus | null;
  /** The run that carries the update into the thread (set once dispatched). */
  notification_run_id: string | null;
  notification_attempt_count: number;
  notification_error: string | null;
  /** Epoch ms of the next delivery step (start the run, or look at it). */
  next_notification_at: number | null;
  /** The assistant of the run that submitted the task (the delivery run uses it). */
  assistant_id: string | null;
  created_at: string;
  updated_at: string;
}

const JSON_COLUMNS = ["driver_data", "result", "result_artifact", "input_required"] as const;
const NUMBER_COLUMNS = ["consecutive_poll_error_count", "cancel_attempt_count", "next_poll_at", "notification_attempt_count", "next_notification_at"] as const;
/** Every column of a record, in insert order. */
export const COLUMNS = [
  "id", "user_id", "thread_id", "server_name", "task_name", "remote_task_id", "driver_data", "status", "result", "result_preview",
  "result_truncated", "result_artifact", "input_required", "error", "last_poll_error", "last_cancel_error", "consecutive_poll_error_count",
  "cancel_attempt_count", "cancel_requested_at", "last_polled_at", "next_poll_at", "notification_status", "notification_run_id",
  "notification_attempt_count", "notification_error", "next_notification_at", "assistant_id", "created_at", "updated_at",
] as const;

/**
 * The table in SQL both backends read: epoch-ms columns are BIGINT (SQLite: INTEGER). `lease_owner` /
 * `lease_expires_at` fence a status call, `notification_lease_*` a delivery step, so two processes never work the
 * same task at once; a process that dies leaves a lease that expires.
 */
export const MCP_TASKS_DDL = [
  `CREATE TABLE IF NOT EXISTS mcp_tasks (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, thread_id TEXT NOT NULL, server_name TEXT NOT NULL, task_name TEXT NOT NULL,
    remote_task_id TEXT NOT NULL, driver_data TEXT NOT NULL, status TEXT NOT NULL, result TEXT, result_preview TEXT,
    result_truncated INTEGER NOT NULL DEFAULT 0, result_artifact TEXT, input_required TEXT, error TEXT, last_poll_error TEXT,
    last_cancel_error TEXT, consecutive_poll_error_count INTEGER NOT NULL DEFAULT 0, cancel_attempt_count INTEGER NOT NULL DEFAULT 0,
    cancel_requested_at TEXT, last_polled_at TEXT, next_poll_at BIGINT, notification_status TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    UNIQUE (user_id, server_name, remote_task_id))`,
  "CREATE INDEX IF NOT EXISTS mcp_tasks_thread ON mcp_tasks (thread_id, user_id, created_at)",
  "CREATE INDEX IF NOT EXISTS mcp_tasks_due ON mcp_tasks (next_poll_at)",
];
/** Columns added after the first release (a table from then gets them on open). */
export const ADDED_COLUMNS: Record<string, string> = {
  notification_run_id: "TEXT", notification_attempt_count: "INTEGER NOT NULL DEFAULT 0", notification_error: "TEXT",
  next_notification_at: "BIGINT", assistant_id: "TEXT", lease_owner: "TEXT", lease_expires_at: "BIGINT",
  notification_lease_owner: "TEXT", notification_lease_expires_at: "BIGINT",
};

function fromRow(row: Record<string, unknown>): McpTaskRecord {
  const out: Record<string, unknown> = {};
  for (const c of COLUMNS) out[c] = row[c] ?? null;
  out.result_truncated = Boolean(Number(row.result_truncated));
  // pg answers BIGINT as a string.
  for (const c of NUMBER_COLUMNS) out[c] = row[c] == null ? (c.startsWith("next_") ? null : 0) : Number(row[c]);
  for (const c of JSON_COLUMNS) out[c] = row[c] == null ? null : JSON.parse(String(row[c]));
  return out as unknown as McpTaskRecord;
}

function toRow(record: Partial<McpTaskRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...record };
  for (const c of JSON_COLUMNS) if (c in record) out[c] = record[c] == null ? null : JSON.stringify(record[c]);
  if ("result_truncated" in record) out.result_truncated = record.result_truncated ? 1 : 0;
  return out;
}

/** Notification states a delivery scan picks up when their `next_notification_at` is due. */
const DELIVERABLE = ["pending", "retry", "dispatched"];

/**
 * The task table over a SQL connection (`?` placeholders). Subclasses give the statements and the row lock of a
 * claim (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's single writer makes one UPDATE atomic).
 */
export abstract class McpTaskStore {
  protected abstract query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /** Suffix of the claim's inner SELECT that locks the rows it picks (empty on SQLite). */
  protected abstract readonly lockClause: string;
  abstract close(): Promise<void>;

  /** Stores a new task (every column given). */
  async insert(record: McpTaskRecord): Promise<void> {
    const row = toRow(record);
    await this.query(`INSERT INTO mcp_tasks (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`, COLUMNS.map((c) => row[c] ?? null));
  }

  /** The task when `userId` owns it, else null. */
  async get(id: string, userId: string): Promise<McpTaskRecord | null> {
    const rows = await this.query("SELECT * FROM mcp_tasks WHERE id = ? AND user_id = ?", [id, userId]);
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** The user's tasks of one thread, newest first. */
  async listByThread(threadId: string, userId: string, limit: number): Promise<McpTaskRecord[]> {
    const rows = await this.query("SELECT * FROM mcp_tasks WHERE thread_id = ? AND user_id = ? ORDER BY created_at DESC, id DESC LIMIT ?", [threadId, userId, limit]);
    return rows.map(fromRow);
  }

  /**
   * Claims up to `limit` pollable tasks due at `nowMs` whose lease is free or expired: `owner` holds them until
   * `nowMs + leaseMs` (one statement: no other process claims the same rows).
   */
  async claimDue(nowMs: number, limit: number, owner: string, leaseMs: number): Promise<McpTaskRecord[]> {
    const rows = await this.query(
      `UPDATE mcp_tasks SET lease_owner = ?, lease_expires_at = ? WHERE id IN (SELECT id FROM mcp_tasks
        WHERE next_poll_at IS NOT NULL AND next_poll_at <= ? AND status IN (${POLLABLE.map(() => "?").join(", ")})
        AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY next_poll_at LIMIT ?${this.lockClause}) RETURNING *`,
      [owner, nowMs + leaseMs, nowMs, ...POLLABLE, nowMs, limit],
    );
    return rows.map(fromRow);
  }

  /** Claims up to `limit` tasks with a delivery step due at `nowMs` (lease as {@link claimDue}). */
  async claimNotifications(nowMs: number, limit: number, owner: string, leaseMs: number): Promise<McpTaskRecord[]> {
    const rows = await this.query(
      `UPDATE mcp_tasks SET notification_lease_owner = ?, notification_lease_expires_at = ? WHERE id IN (SELECT id FROM mcp_tasks
        WHERE notification_status IN (${DELIVERABLE.map(() => "?").join(", ")}) AND next_notification_at IS NOT NULL AND next_notification_at <= ?
        AND (notification_lease_expires_at IS NULL OR notification_lease_expires_at <= ?) ORDER BY next_notification_at LIMIT ?${this.lockClause}) RETURNING *`,
      [owner, nowMs + leaseMs, ...DELIVERABLE, nowMs, nowMs, limit],
    );
    return rows.map(fromRow);
  }

  /**
   * Sets some columns of a task (and `updated_at`); returns the updated row, or null when there is no such task or
   * `fence` names a lease (`lease` or `notification_lease`) that `fence.owner` no longer holds (it expired and
   * another process claimed the task: its answer wins). A fenced update releases that lease.
   */
  async update(id: string, changes: Partial<McpTaskRecord>, fence?: { lease: "lease" | "notification_lease"; owner: string }): Promise<McpTaskRecord | null> {
    const row = toRow({ ...changes, updated_at: new Date().toISOString() });
    const keys = Object.keys(row).filter((k) => (COLUMNS as readonly string[]).includes(k) && k !== "id");
    const sets = keys.map((k) => `${k} = ?`);
    const params: unknown[] = keys.map((k) => row[k] ?? null);
    let where = "id = ?";
    params.push(id);
    if (fence) {
      sets.push(`${fence.lease}_owner = NULL`, `${fence.lease}_expires_at = NULL`);
      where += ` AND ${fence.lease}_owner = ?`;
      params.push(fence.owner);
    }
    const rows = await this.query(`UPDATE mcp_tasks SET ${sets.join(", ")} WHERE ${where} RETURNING *`, params);
    return rows[0] ? fromRow(rows[0]) : null;
  }
}
