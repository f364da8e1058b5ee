// Scheduled tasks in PostgreSQL (`database.backend: postgres`), shared by every gateway process. The claim is
// upstream's: in one transaction, a budget lock, `SELECT ... FOR UPDATE SKIP LOCKED` of the due rows and the
// lease update, so two processes polling together never claim the same task.
import type pg from "pg";
import { ACTIVE_COUNT_SQL, DUE_WHERE, SCHEDULER_DDL, SqlTaskStore, TASK_COLUMNS, taskValues, toTask, type ScheduledTask } from "./task-store.js";
import { inTransaction, migrateUnderLock } from "../persistence/postgres/pg-transaction.js";

/** Advisory-lock key of the global `max_concurrent_runs` budget (one claimer counts at a time). */
const BUDGET_LOCK = 4694001;
/** Advisory-lock key of the DDL (processes starting together). */
const DDL_LOCK = 4694002;

/** `?` placeholders as `$1, $2, ...`. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** {@link SqlTaskStore} on a pg pool. Call {@link PgTaskStore.migrate} once before use. */
export class PgTaskStore extends SqlTaskStore {
  constructor(private readonly pool: pg.Pool) {
    super();
  }

  /** Creates the tables (idempotent, serialised across processes). */
  async migrate(): Promise<void> {
    await migrateUnderLock(this.pool, DDL_LOCK, SCHEDULER_DDL);
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  protected async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return (await this.pool.query(numbered(sql), params)).rows as Record<string, unknown>[];
  }

  protected async exec(sql: string, params: unknown[]): Promise<number> {
    return (await this.pool.query(numbered(sql), params)).rowCount ?? 0;
  }

  protected isUniqueViolation(err: unknown): boolean {
    return (err as { code?: string }).code === "23505";
  }

  /** Count and insert under a per-user advisory lock, so two concurrent creates cannot both pass the cap. */
  async insertTask(task: ScheduledTask, maxPerUser: number): Promise<boolean> {
    return this.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scheduled_tasks:${task.user_id}`]);
      const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM scheduled_tasks WHERE user_id = $1", [task.user_id]);
      if (Number(rows[0].n) >= maxPerUser) return false;
      await client.query(numbered(`INSERT INTO scheduled_tasks (${TASK_COLUMNS.join(", ")}) VALUES (${TASK_COLUMNS.map(() => "?").join(", ")})`), taskValues(task));
      return true;
    });
  }

  async claimDue(now: string, owner: string, leaseExpiresAt: string, maxActive: number): Promise<ScheduledTask[]> {
    return this.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [BUDGET_LOCK]);
      const { rows: count } = await client.query<{ n: string }>(numbered(`SELECT ${ACTIVE_COUNT_SQL} AS n`), [now]);
      const budget = maxActive - Number(count[0].n);
      if (budget <= 0) return [];
      const { rows } = await client.query(
        numbered(`UPDATE scheduled_tasks t SET status = 'running', lease_owner = ?, lease_expires_at = ?, updated_at = ?
          FROM (SELECT id FROM scheduled_tasks WHERE ${DUE_WHERE} ORDER BY next_run_at, id LIMIT ? FOR UPDATE SKIP LOCKED) due
          WHERE t.id = due.id RETURNING t.*`),
        [owner, leaseExpiresAt, new Date().toISOString(), now, now, now, budget],
      );
      return rows.map(toTask).sort((a, b) => String(a.next_run_at).localeCompare(String(b.next_run_at)));
    });
  }
}
