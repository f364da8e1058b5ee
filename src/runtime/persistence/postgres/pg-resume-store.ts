// Resume specs of in-flight runs in PostgreSQL (`database.backend: postgres` without a Redis stream bridge): the
// PostgreSQL twin of sqlite/resume-store.ts, so one process on PostgreSQL resumes, when it starts again, the runs a
// crash cut short (docs/durable-runs.md, "One process"). With Redis the coordinator keeps the specs in Redis and
// resumes runs across processes (stream/run-handover.ts); this table is then not used.
import type pg from "pg";
import type { OrphanRun, ResumeStore } from "../sqlite/resume-store.js";
import { inTransaction, migrateUnderLock } from "./pg-transaction.js";

/** Serialises the DDL of processes starting together. */
const RESUME_DDL_LOCK = 0x0de3f50;

const DDL = ["CREATE TABLE IF NOT EXISTS run_resumes (run_id TEXT PRIMARY KEY, spec TEXT NOT NULL, resumes INTEGER NOT NULL DEFAULT 0)"] as const;

/** In flight: the statuses a run a crash cut short is left in. */
const IN_FLIGHT = "('pending', 'running')";

/** {@link ResumeStore} in the `run_resumes` table beside `runs`. Call {@link PgResumeStore.migrate} once before use. */
export class PgResumeStore implements ResumeStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Creates the `run_resumes` table when missing (idempotent, serialised across processes). */
  static async migrate(pool: pg.Pool): Promise<void> {
    await migrateUnderLock(pool, RESUME_DDL_LOCK, DDL);
  }

  async put(runId: string, spec: string): Promise<void> {
    await this.pool.query("INSERT INTO run_resumes (run_id, spec, resumes) VALUES ($1, $2, 0) ON CONFLICT (run_id) DO UPDATE SET spec = EXCLUDED.spec, resumes = 0", [runId, spec]);
  }

  async delete(runId: string): Promise<void> {
    await this.pool.query("DELETE FROM run_resumes WHERE run_id = $1", [runId]);
  }

  async orphans(): Promise<OrphanRun[]> {
    return inTransaction(this.pool, async (client) => {
      await client.query(`DELETE FROM run_resumes s WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = s.run_id AND r.status IN ${IN_FLIGHT})`);
      const { rows } = await client.query<OrphanRun>(
        `SELECT r.run_id, r.thread_id, s.spec, s.resumes FROM runs r JOIN run_resumes s ON s.run_id = r.run_id WHERE r.status IN ${IN_FLIGHT} ORDER BY r.created_at, r.seq`,
      );
      return rows;
    });
  }

  async withoutSpec(): Promise<string[]> {
    const { rows } = await this.pool.query<{ run_id: string }>(`SELECT run_id FROM runs r WHERE status IN ${IN_FLIGHT} AND NOT EXISTS (SELECT 1 FROM run_resumes s WHERE s.run_id = r.run_id)`);
    return rows.map((r) => r.run_id);
  }

  async bump(runId: string): Promise<number> {
    const { rows } = await this.pool.query<{ resumes: number }>("UPDATE run_resumes SET resumes = resumes + 1 WHERE run_id = $1 RETURNING resumes", [runId]);
    return rows[0]?.resumes ?? 0;
  }
}
