// Run feedback in PostgreSQL (`database.backend: postgres`): the `run_feedback` table, so feedback given through
// one gateway process is read, counted and deleted through any other. Same contract as the file store
// (webapp/feedback-store.ts): one feedback per user, thread and run, upserted.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Feedback, FeedbackInput, FeedbackRepository } from "../../webapp/feedback-store.js";

/** Serialises the DDL of processes starting together. */
const FEEDBACK_DDL_LOCK = 0x0de3f23;

const COLUMNS = "feedback_id, run_id, thread_id, user_id, message_id, rating, comment, created_at";

/** {@link FeedbackRepository} over a pg pool. Call {@link PgFeedbackStore.migrate} once before use. */
export class PgFeedbackStore implements FeedbackRepository {
  constructor(private readonly pool: pg.Pool) {}

  /** Creates the `run_feedback` table when missing (idempotent, serialised across processes). */
  static async migrate(pool: pg.Pool): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [FEEDBACK_DDL_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS run_feedback (
        feedback_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, run_id TEXT NOT NULL, user_id TEXT NOT NULL,
        message_id TEXT, rating INTEGER NOT NULL, comment TEXT, created_at TEXT NOT NULL, UNIQUE (thread_id, run_id, user_id))`);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async list(threadId: string, runId: string, userId: string): Promise<Feedback[]> {
    const { rows } = await this.pool.query<Feedback>(`SELECT ${COLUMNS} FROM run_feedback WHERE thread_id = $1 AND run_id = $2 AND user_id = $3 ORDER BY created_at DESC`, [threadId, runId, userId]);
    return rows;
  }

  /** One statement: a concurrent upsert of the same user's feedback on the same run replaces, never duplicates. */
  async upsert(threadId: string, runId: string, userId: string, input: FeedbackInput): Promise<Feedback> {
    const { rows } = await this.pool.query<Feedback>(
      `INSERT INTO run_feedback (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (thread_id, run_id, user_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment,
         message_id = COALESCE(excluded.message_id, run_feedback.message_id)
       RETURNING ${COLUMNS}`,
      [randomUUID(), runId, threadId, userId, input.message_id ?? null, input.rating, input.comment ?? null, new Date().toISOString()],
    );
    return rows[0];
  }

  async delete(threadId: string, runId: string, userId: string, feedbackId?: string): Promise<number> {
    const byId = feedbackId ? " AND feedback_id = $4" : "";
    const result = await this.pool.query(`DELETE FROM run_feedback WHERE thread_id = $1 AND run_id = $2 AND user_id = $3${byId}`, feedbackId ? [threadId, runId, userId, feedbackId] : [threadId, runId, userId]);
    return result.rowCount ?? 0;
  }

  async byRun(threadId: string, userId: string): Promise<Map<string, Feedback>> {
    const { rows } = await this.pool.query<Feedback>(`SELECT ${COLUMNS} FROM run_feedback WHERE thread_id = $1 AND user_id = $2`, [threadId, userId]);
    return new Map(rows.map((f) => [f.run_id, f]));
  }
}
