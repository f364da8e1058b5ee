// The `run_events` table on PostgreSQL (`database.backend: postgres`; DeerFlow DbRunEventStore): every gateway
// process reads the events a run on any process wrote.
import type pg from "pg";
import { fromRow, listSql, taskIdOf, type RunEvent, type RunEventQuery, type RunEventRow, type RunEventStore } from "../run-event-store.js";

/** Advisory-lock key of the DDL (processes starting together create the table one at a time). */
const DDL_LOCK = 0x0de3f12;

/** Rows per INSERT statement (8 parameters each, far below PostgreSQL's 65,535). */
const ROWS_PER_INSERT = 500;

/** `?` placeholders as `$1, $2, ...`. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/**
 * Content and metadata are stored as JSON text, not JSONB: a tool's output may hold a NUL character, which JSONB
 * refuses, and the one field filtered on (`metadata.task_id`) has a column of its own.
 */
const DDL = `CREATE TABLE IF NOT EXISTS run_events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, category TEXT NOT NULL,
  content TEXT NOT NULL, metadata TEXT NOT NULL, task_id TEXT, created_at TEXT NOT NULL,
  PRIMARY KEY (run_id, seq))`;

/** {@link RunEventStore} on a pg pool. Call {@link PgRunEventStore.migrate} once before use. */
export class PgRunEventStore implements RunEventStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Creates the table (idempotent, serialised across processes by an advisory lock). @throws the database error. */
  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [DDL_LOCK]);
      await client.query(DDL);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** One multi-row INSERT per {@link ROWS_PER_INSERT} rows, in one transaction when there are more. */
  async putBatch(rows: RunEvent[]): Promise<void> {
    if (!rows.length) return;
    const statements: { text: string; values: unknown[] }[] = [];
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      const values = chunk.flatMap((r) => [r.run_id, r.seq, r.event_type, r.category, JSON.stringify(r.content ?? null), JSON.stringify(r.metadata ?? {}), taskIdOf(r.metadata), r.created_at]);
      const tuples = chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ");
      statements.push({
        text: numbered(`INSERT INTO run_events (run_id, seq, event_type, category, content, metadata, task_id, created_at) VALUES ${tuples}
          ON CONFLICT (run_id, seq) DO UPDATE SET event_type = EXCLUDED.event_type, category = EXCLUDED.category, content = EXCLUDED.content,
          metadata = EXCLUDED.metadata, task_id = EXCLUDED.task_id, created_at = EXCLUDED.created_at`),
        values,
      });
    }
    if (statements.length === 1) {
      await this.pool.query(statements[0]);
      return;
    }
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      for (const s of statements) await client.query(s);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async list(runId: string, query: RunEventQuery): Promise<RunEvent[]> {
    const { sql, params } = listSql(runId, query);
    return (await this.pool.query<RunEventRow>(numbered(sql), params)).rows.map(fromRow);
  }

  async maxSeq(runId: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM run_events WHERE run_id = $1", [runId]);
    return Number(rows[0]?.seq ?? 0);
  }

  async deleteRuns(runIds: string[]): Promise<void> {
    if (runIds.length) await this.pool.query("DELETE FROM run_events WHERE run_id = ANY($1)", [runIds]);
  }
}
