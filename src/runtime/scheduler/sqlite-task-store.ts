// Scheduled tasks in the gateway's SQLite database. Each statement is synchronous on the connection the other
// stores use, so a claim (one UPDATE ... RETURNING) can never interleave with another write of this process, and
// SQLite's single writer serialises it against other processes sharing the file.
import type Database from "better-sqlite3";
import { ACTIVE_COUNT_SQL, DUE_WHERE, SCHEDULER_DDL, SqlTaskStore, TASK_COLUMNS, taskValues, toTask, type ScheduledTask } from "./task-store.js";

/** {@link SqlTaskStore} on better-sqlite3; the tables are created on construction. */
export class SqliteTaskStore extends SqlTaskStore {
  /** @param db The gateway database connection. */
  constructor(private readonly db: Database.Database) {
    super();
    for (const ddl of SCHEDULER_DDL) db.exec(ddl);
  }

  protected async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.db.prepare(sql).all(...params) as Record<string, unknown>[];
  }

  protected async exec(sql: string, params: unknown[]): Promise<number> {
    return this.db.prepare(sql).run(...params).changes;
  }

  protected isUniqueViolation(err: unknown): boolean {
    return (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE";
  }

  /** One INSERT ... SELECT ... WHERE count < cap: the count and the insert are one atomic statement. */
  async insertTask(task: ScheduledTask, maxPerUser: number): Promise<boolean> {
    const sql = `INSERT INTO scheduled_tasks (${TASK_COLUMNS.join(", ")}) SELECT ${TASK_COLUMNS.map(() => "?").join(", ")}
      WHERE (SELECT count(*) FROM scheduled_tasks WHERE user_id = ?) < ?`;
    return this.db.prepare(sql).run(...taskValues(task), task.user_id, maxPerUser).changes > 0;
  }

  /** The atomic claim: UPDATE ... WHERE id IN (due, oldest first, LIMIT the free budget) RETURNING. */
  async claimDue(now: string, owner: string, leaseExpiresAt: string, maxActive: number): Promise<ScheduledTask[]> {
    const sql = `UPDATE scheduled_tasks SET status = 'running', lease_owner = ?, lease_expires_at = ?, updated_at = ?
      WHERE id IN (SELECT id FROM scheduled_tasks WHERE ${DUE_WHERE} ORDER BY next_run_at, id
                   LIMIT max(0, ? - (${ACTIVE_COUNT_SQL})))
      RETURNING *`;
    const rows = this.db.prepare(sql).all(owner, leaseExpiresAt, new Date().toISOString(), now, now, now, maxActive, now) as Record<string, unknown>[];
    return rows.map(toTask).sort((a, b) => String(a.next_run_at).localeCompare(String(b.next_run_at)));
  }
}
