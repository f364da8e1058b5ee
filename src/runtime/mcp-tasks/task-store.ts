// The durable MCP task table (DeerFlow persistence/mcp_tasks): one row per submitted remote job, its poll schedule
// and last known state. Its own SQLite file under the runtime home (`data/mcp-tasks.sqlite`).
import type Database from "better-sqlite3";
import { openSqlite } from "../persistence/sqlite/sqlite.js";

/** Upstream's normalized task states. */
export type McpTaskStatus = "submitted" | "working" | "input_required" | "completed" | "failed" | "cancelled";
/** States the poller keeps asking about. */
export const POLLABLE: readonly McpTaskStatus[] = ["submitted", "working", "input_required"];

/** One task row. Timestamps are ISO strings; `result` and `input_required` are parsed JSON. */
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
  /** `pending` once the task needs attention (input required or finished); null before. */
  notification_status: string | null;
  created_at: string;
  updated_at: string;
}

const JSON_COLUMNS = ["driver_data", "result", "result_artifact", "input_required"] as const;
const COLUMNS = [
  "id", "user_id", "thread_id", "server_name", "task_name", "remote_task_id", "driver_data", "status", "result", "result_preview",
  "result_truncated", "result_artifact", "input_required", "error", "last_poll_error", "last_cancel_error", "consecutive_poll_error_count",
  "cancel_attempt_count", "cancel_requested_at", "last_polled_at", "next_poll_at", "notification_status", "created_at", "updated_at",
] as const;

function fromRow(row: Record<string, unknown>): McpTaskRecord {
  const out: Record<string, unknown> = { ...row, result_truncated: Boolean(row.result_truncated) };
  for (const c of JSON_COLUMNS) out[c] = row[c] == null ? null : JSON.parse(String(row[c]));
  return out as unknown as McpTaskRecord;
}

function toRow(record: Partial<McpTaskRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...record };
  for (const c of JSON_COLUMNS) if (c in record) out[c] = record[c] == null ? null : JSON.stringify(record[c]);
  if ("result_truncated" in record) out.result_truncated = record.result_truncated ? 1 : 0;
  return out;
}

/** The task table. Every method is synchronous and atomic on its own. */
export class McpTaskStore {
  private readonly db: Database.Database;

  /** @param file SQLite file (created with its directory by the caller), or `:memory:`. */
  constructor(file: string) {
    this.db = openSqlite(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS mcp_tasks (
      id TEXT PRIMARY KEY, user_id TEXT NOT NULL, thread_id TEXT NOT NULL, server_name TEXT NOT NULL, task_name TEXT NOT NULL,
      remote_task_id TEXT NOT NULL, driver_data TEXT NOT NULL, status TEXT NOT NULL, result TEXT, result_preview TEXT,
      result_truncated INTEGER NOT NULL DEFAULT 0, result_artifact TEXT, input_required TEXT, error TEXT, last_poll_error TEXT,
      last_cancel_error TEXT, consecutive_poll_error_count INTEGER NOT NULL DEFAULT 0, cancel_attempt_count INTEGER NOT NULL DEFAULT 0,
      cancel_requested_at TEXT, last_polled_at TEXT, next_poll_at INTEGER, notification_status TEXT,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
      UNIQUE (user_id, server_name, remote_task_id));
      CREATE INDEX IF NOT EXISTS mcp_tasks_thread ON mcp_tasks (thread_id, user_id, created_at);
      CREATE INDEX IF NOT EXISTS mcp_tasks_due ON mcp_tasks (next_poll_at);`);
  }

  /** Stores a new task (every column given). */
  insert(record: McpTaskRecord): void {
    const row = toRow(record);
    this.db.prepare(`INSERT INTO mcp_tasks (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((c) => `@${c}`).join(", ")})`).run(row);
  }

  /** The task when `userId` owns it, else null. */
  get(id: string, userId: string): McpTaskRecord | null {
    const row = this.db.prepare("SELECT * FROM mcp_tasks WHERE id = ? AND user_id = ?").get(id, userId) as Record<string, unknown> | undefined;
    return row ? fromRow(row) : null;
  }

  /** The user's tasks of one thread, newest first. */
  listByThread(threadId: string, userId: string, limit: number): McpTaskRecord[] {
    const rows = this.db.prepare("SELECT * FROM mcp_tasks WHERE thread_id = ? AND user_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?").all(threadId, userId, limit);
    return (rows as Record<string, unknown>[]).map(fromRow);
  }

  /** Pollable tasks whose next poll is due at `nowMs`, soonest first. */
  due(nowMs: number, limit: number): McpTaskRecord[] {
    const rows = this.db.prepare(`SELECT * FROM mcp_tasks WHERE next_poll_at IS NOT NULL AND next_poll_at <= ? AND status IN (${POLLABLE.map(() => "?").join(", ")}) ORDER BY next_poll_at LIMIT ?`).all(nowMs, ...POLLABLE, limit);
    return (rows as Record<string, unknown>[]).map(fromRow);
  }

  /** Sets some columns of a task (and `updated_at`); returns the updated row. */
  update(id: string, changes: Partial<McpTaskRecord>): McpTaskRecord | null {
    const row = toRow({ ...changes, updated_at: new Date().toISOString() });
    const keys = Object.keys(row).filter((k) => (COLUMNS as readonly string[]).includes(k) && k !== "id");
    this.db.prepare(`UPDATE mcp_tasks SET ${keys.map((k) => `${k} = @${k}`).join(", ")} WHERE id = @id`).run({ ...row, id });
    const out = this.db.prepare("SELECT * FROM mcp_tasks WHERE id = ?").get(id) as Record<string, unknown> | undefined;
    return out ? fromRow(out) : null;
  }

  close(): void {
    this.db.close();
  }
}
