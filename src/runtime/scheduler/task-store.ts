// The scheduled-task tables (DeerFlow persistence/scheduled_tasks, scheduled_task_runs) and the one store contract
// both backends implement. The SQL is shared: `?` placeholders (renumbered for PostgreSQL), ISO-string timestamps
// (they sort as instants), JSON as text. Only the claim and the capped insert differ per backend.

/** A task's status (upstream's values): `running` while claimed, or while a one-shot's run is live. */
export type TaskStatus = "enabled" | "paused" | "running" | "completed" | "failed" | "cancelled";
/** A task run's status: `queued`/`running` are active (at most one per task), the rest are terminal. */
export type TaskRunStatus = "queued" | "running" | "success" | "failed" | "skipped" | "interrupted";

/** A scheduled task as the API returns it (upstream `ScheduledTask`, plus `user_id`, `assistant_id`, `model_name`, `overlap_policy`). */
export interface ScheduledTask {
  id: string;
  user_id: string;
  thread_id: string | null;
  context_mode: "fresh_thread_per_run" | "reuse_thread";
  /** The agent the run uses: `lead_agent` or a custom agent's name. */
  assistant_id: string;
  /** The model the run asks for (`context.model_name`); null: the agent's / config's default. */
  model_name: string | null;
  title: string;
  prompt: string;
  schedule_type: "once" | "cron";
  /** `{cron: "m h dom mon dow"}` or `{run_at: "<ISO 8601>"}`. */
  schedule_spec: Record<string, unknown>;
  timezone: string;
  status: TaskStatus;
  overlap_policy: "skip";
  next_run_at: string | null;
  last_run_at: string | null;
  last_run_id: string | null;
  last_thread_id: string | null;
  last_error: string | null;
  run_count: number;
  created_at: string;
  updated_at: string;
}

/** One firing of a task (upstream `ScheduledTaskRun`). */
export interface ScheduledTaskRun {
  id: string;
  task_id: string;
  thread_id: string;
  run_id: string | null;
  scheduled_for: string;
  trigger: "scheduled" | "manual";
  status: TaskRunStatus;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
}

/** Fields a task update may set. */
export type TaskUpdate = Partial<Pick<ScheduledTask, "context_mode" | "thread_id" | "title" | "prompt" | "schedule_spec" | "timezone" | "status" | "next_run_at" | "last_error">>;

/** What the dispatcher writes on a task once a firing has launched, failed or been skipped. */
export interface AfterLaunch {
  status: TaskStatus;
  next_run_at: string | null;
  last_run_at: string | null;
  last_run_id: string | null;
  last_thread_id: string | null;
  last_error: string | null;
  incrementRunCount: boolean;
  /** Keep a terminal status (a fast run's completion already finalised the task). */
  protectTerminal?: boolean;
  /** Only when this process still holds the claim's lease (null: a manual trigger, no lease). */
  expectedLeaseOwner?: string | null;
}

/** Thrown by {@link ScheduledTaskStore.createRun} when the task already has an active run (the unique index). */
export class ActiveRunConflict extends Error {}

/** The storage of scheduled tasks and their runs. Every method is atomic on its own. */
export interface ScheduledTaskStore {
  /** Inserts `task` unless its user already holds `maxPerUser` tasks; resolves false then (nothing stored). */
  insertTask(task: ScheduledTask, maxPerUser: number): Promise<boolean>;
  getTask(id: string, userId?: string): Promise<ScheduledTask | null>;
  /** The user's tasks (of one thread when given), newest first. */
  listTasks(userId: string, threadId?: string): Promise<ScheduledTask[]>;
  updateTask(id: string, userId: string, update: TaskUpdate): Promise<ScheduledTask | null>;
  /** Deletes the task and its run history; resolves whether it existed. */
  deleteTask(id: string, userId: string): Promise<boolean>;
  /**
   * Claims up to `maxActive` minus the active runs and live reservations of due tasks (`next_run_at <= now`,
   * enabled, or running with an expired lease): sets `status = running` and the lease in the same statement or
   * transaction, so a task is claimed by one process only.
   */
  claimDue(now: string, owner: string, leaseExpiresAt: string, maxActive: number): Promise<ScheduledTask[]>;
  afterLaunch(id: string, fields: AfterLaunch): Promise<boolean>;
  /** Inserts a run row. @throws ActiveRunConflict when `status` is active and the task already has an active run. */
  createRun(run: ScheduledTaskRun): Promise<void>;
  /** Sets a run's fields; with `protectTerminal`, a run already terminal keeps its status. */
  updateRun(id: string, fields: Partial<Pick<ScheduledTaskRun, "status" | "run_id" | "error" | "started_at" | "finished_at">>, protectTerminal?: boolean): Promise<void>;
  /** The task's runs, newest first. */
  listRuns(taskId: string, limit: number, offset: number): Promise<ScheduledTaskRun[]>;
  /** Every queued/running task run. */
  activeRuns(): Promise<ScheduledTaskRun[]>;
  /** Marks one-shots left `running` without a lease (their run's process died) `cancelled`; resolves how many. */
  cancelStuckOnce(error: string, taskIds?: string[]): Promise<number>;
}

/** Active task-run statuses, as SQL. */
export const ACTIVE_RUN_SQL = "('queued', 'running')";

/** The DDL (idempotent). The partial unique index is the atomic arbiter of "one active run per task". */
export const SCHEDULER_DDL = [
  `CREATE TABLE IF NOT EXISTS scheduled_tasks (
     id TEXT PRIMARY KEY, user_id TEXT NOT NULL, thread_id TEXT, context_mode TEXT NOT NULL, assistant_id TEXT NOT NULL,
     model_name TEXT, title TEXT NOT NULL, prompt TEXT NOT NULL, schedule_type TEXT NOT NULL, schedule_spec TEXT NOT NULL,
     timezone TEXT NOT NULL, status TEXT NOT NULL, overlap_policy TEXT NOT NULL, next_run_at TEXT, last_run_at TEXT,
     last_run_id TEXT, last_thread_id TEXT, last_error TEXT, lease_owner TEXT, lease_expires_at TEXT,
     run_count INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS scheduled_tasks_user ON scheduled_tasks (user_id, created_at)",
  "CREATE INDEX IF NOT EXISTS scheduled_tasks_due ON scheduled_tasks (next_run_at) WHERE next_run_at IS NOT NULL",
  `CREATE TABLE IF NOT EXISTS scheduled_task_runs (
     id TEXT PRIMARY KEY, task_id TEXT NOT NULL, thread_id TEXT NOT NULL, run_id TEXT, scheduled_for TEXT NOT NULL,
     trigger TEXT NOT NULL, status TEXT NOT NULL, error TEXT, started_at TEXT, finished_at TEXT, created_at TEXT NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS scheduled_task_runs_task ON scheduled_task_runs (task_id, created_at)",
  `CREATE UNIQUE INDEX IF NOT EXISTS uq_scheduled_task_run_active ON scheduled_task_runs (task_id) WHERE status IN ${ACTIVE_RUN_SQL}`,
];

/** The task columns in insert order. */
export const TASK_COLUMNS = [
  "id", "user_id", "thread_id", "context_mode", "assistant_id", "model_name", "title", "prompt", "schedule_type", "schedule_spec",
  "timezone", "status", "overlap_policy", "next_run_at", "last_run_at", "last_run_id", "last_thread_id", "last_error",
  "run_count", "created_at", "updated_at",
] as const;
const RUN_COLUMNS = ["id", "task_id", "thread_id", "run_id", "scheduled_for", "trigger", "status", "error", "started_at", "finished_at", "created_at"] as const;

/** The WHERE of a claim: due, and enabled with no live lease, or running with an expired one (claimer died). */
export const DUE_WHERE = `next_run_at IS NOT NULL AND next_run_at <= ? AND (
  (status = 'enabled' AND (lease_expires_at IS NULL OR lease_expires_at < ?))
  OR (status = 'running' AND lease_expires_at IS NOT NULL AND lease_expires_at < ?))`;

/** Active runs plus live reservations (claimed, not yet launched): what counts against `max_concurrent_runs`. */
export const ACTIVE_COUNT_SQL = `(SELECT count(*) FROM scheduled_task_runs WHERE status IN ${ACTIVE_RUN_SQL})
  + (SELECT count(*) FROM scheduled_tasks t WHERE t.lease_owner IS NOT NULL AND t.lease_expires_at >= ?
     AND NOT EXISTS (SELECT 1 FROM scheduled_task_runs r WHERE r.task_id = t.id AND r.status IN ${ACTIVE_RUN_SQL}))`;

type Row = Record<string, unknown>;

/** A stored task row as the API shape (JSON parsed, lease columns dropped). */
export function toTask(row: Row): ScheduledTask {
  const { lease_owner: _o, lease_expires_at: _e, ...rest } = row;
  return { ...(rest as unknown as ScheduledTask), schedule_spec: JSON.parse(String(row.schedule_spec)) as Record<string, unknown>, run_count: Number(row.run_count) };
}

/** The values of `task` in {@link TASK_COLUMNS} order. */
export function taskValues(task: ScheduledTask): unknown[] {
  return TASK_COLUMNS.map((c) => (c === "schedule_spec" ? JSON.stringify(task.schedule_spec) : task[c]));
}

/**
 * The backend-independent part of a store: every statement but the claim and the capped insert, over `query`
 * (`?` placeholders; the PostgreSQL subclass renumbers them).
 */
export abstract class SqlTaskStore implements ScheduledTaskStore {
  protected abstract query(sql: string, params: unknown[]): Promise<Row[]>;
  /** Runs a write; resolves the number of rows it changed. */
  protected abstract exec(sql: string, params: unknown[]): Promise<number>;
  protected abstract isUniqueViolation(err: unknown): boolean;
  abstract insertTask(task: ScheduledTask, maxPerUser: number): Promise<boolean>;
  abstract claimDue(now: string, owner: string, leaseExpiresAt: string, maxActive: number): Promise<ScheduledTask[]>;

  async getTask(id: string, userId?: string): Promise<ScheduledTask | null> {
    const rows = await this.query("SELECT * FROM scheduled_tasks WHERE id = ?", [id]);
    return rows[0] && (userId === undefined || rows[0].user_id === userId) ? toTask(rows[0]) : null;
  }

  async listTasks(userId: string, threadId?: string): Promise<ScheduledTask[]> {
    const byThread = threadId === undefined ? "" : " AND thread_id = ?";
    const rows = await this.query(`SELECT * FROM scheduled_tasks WHERE user_id = ?${byThread} ORDER BY created_at DESC, id DESC`, threadId === undefined ? [userId] : [userId, threadId]);
    return rows.map(toTask);
  }

  async updateTask(id: string, userId: string, update: TaskUpdate): Promise<ScheduledTask | null> {
    const entries = Object.entries(update).filter(([, v]) => v !== undefined);
    const sets = [...entries.map(([k]) => `${k} = ?`), "updated_at = ?"].join(", ");
    const values = entries.map(([k, v]) => (k === "schedule_spec" ? JSON.stringify(v) : v));
    const changed = await this.exec(`UPDATE scheduled_tasks SET ${sets} WHERE id = ? AND user_id = ?`, [...values, new Date().toISOString(), id, userId]);
    return changed ? this.getTask(id, userId) : null;
  }

  async deleteTask(id: string, userId: string): Promise<boolean> {
    const deleted = await this.exec("DELETE FROM scheduled_tasks WHERE id = ? AND user_id = ?", [id, userId]);
    if (deleted) await this.exec("DELETE FROM scheduled_task_runs WHERE task_id = ?", [id]);
    return deleted > 0;
  }

  async afterLaunch(id: string, f: AfterLaunch): Promise<boolean> {
    const status = f.protectTerminal ? "CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN status ELSE ? END" : "?";
    const error = f.protectTerminal ? "CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN last_error ELSE ? END" : "?";
    const fence = f.expectedLeaseOwner ? " AND lease_owner = ?" : "";
    const changed = await this.exec(
      `UPDATE scheduled_tasks SET status = ${status}, last_error = ${error}, next_run_at = ?, last_run_at = ?, last_run_id = ?,
         last_thread_id = ?, run_count = run_count + ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ?${fence}`,
      [f.status, f.last_error, f.next_run_at, f.last_run_at, f.last_run_id, f.last_thread_id, f.incrementRunCount ? 1 : 0, new Date().toISOString(), id, ...(f.expectedLeaseOwner ? [f.expectedLeaseOwner] : [])],
    );
    return changed > 0;
  }

  async createRun(run: ScheduledTaskRun): Promise<void> {
    try {
      await this.exec(`INSERT INTO scheduled_task_runs (${RUN_COLUMNS.join(", ")}) VALUES (${RUN_COLUMNS.map(() => "?").join(", ")})`, RUN_COLUMNS.map((c) => run[c]));
    } catch (err) {
      if (this.isUniqueViolation(err)) throw new ActiveRunConflict("task already has an active run");
      throw err;
    }
  }

  async updateRun(id: string, fields: Partial<Pick<ScheduledTaskRun, "status" | "run_id" | "error" | "started_at" | "finished_at">>, protectTerminal = false): Promise<void> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (!entries.length) return;
    const sets = entries.map(([k]) => (k === "status" && protectTerminal ? `status = CASE WHEN status IN ${ACTIVE_RUN_SQL} THEN ? ELSE status END` : `${k} = ?`));
    await this.exec(`UPDATE scheduled_task_runs SET ${sets.join(", ")} WHERE id = ?`, [...entries.map(([, v]) => v), id]);
  }

  async listRuns(taskId: string, limit: number, offset: number): Promise<ScheduledTaskRun[]> {
    return (await this.query("SELECT * FROM scheduled_task_runs WHERE task_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", [taskId, limit, offset])) as unknown as ScheduledTaskRun[];
  }

  async activeRuns(): Promise<ScheduledTaskRun[]> {
    return (await this.query(`SELECT * FROM scheduled_task_runs WHERE status IN ${ACTIVE_RUN_SQL}`, [])) as unknown as ScheduledTaskRun[];
  }

  async cancelStuckOnce(error: string, taskIds?: string[]): Promise<number> {
    if (taskIds && !taskIds.length) return 0;
    const only = taskIds ? ` AND id IN (${taskIds.map(() => "?").join(", ")})` : "";
    return this.exec(
      `UPDATE scheduled_tasks SET status = 'cancelled', last_error = ?, updated_at = ? WHERE schedule_type = 'once' AND status = 'running' AND lease_expires_at IS NULL${only}`,
      [error, new Date().toISOString(), ...(taskIds ?? [])],
    );
  }
}
