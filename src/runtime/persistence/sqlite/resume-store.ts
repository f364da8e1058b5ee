// Resume specs of in-flight runs in the gateway's SQLite file (docs/durable-runs.md, "One process"): what a process
// that starts again needs to resume the runs a crash of the previous one cut short. The Redis coordinator keeps the
// same thing in Redis (stream/run-handover.ts) when several processes share the work.
import type Database from "better-sqlite3";
import { commitWith, type GroupCommit } from "./group-commit.js";
import { StatementCache } from "./statement-cache.js";

/** A run left `pending` or `running` by a process that stopped without finishing it, with its resume spec. */
export interface OrphanRun {
  run_id: string;
  thread_id: string;
  /** The run's `ResumeSpec` (JSON), as stored at admission. */
  spec: string;
  /** Times the run was resumed already (0: never). */
  resumes: number;
}

/**
 * Resume specs of this process's in-flight runs, durable beside their records. A spec is written with the run's
 * admission and dropped when the run finishes or is cancelled, so only a crash leaves one behind.
 */
export interface ResumeStore {
  /** Keeps a run's spec (JSON `ResumeSpec`) while it is in flight. */
  put(runId: string, spec: string): Promise<void>;
  /** Drops a run's spec: it finished, or was cancelled (a cancelled run is never resumed). */
  delete(runId: string): Promise<void>;
  /**
   * Runs left in flight (`pending`/`running`) with a spec, oldest first; specs of runs no longer in flight are
   * dropped on the way (their process stopped between the outcome and the drop).
   */
  orphans(): Promise<OrphanRun[]>;
  /** Ids of the runs left in flight with no spec: nothing can resume them (they are interrupted). */
  withoutSpec(): Promise<string[]>;
  /** Counts one more resume of a run (before it starts again, so a crash loop still counts). @returns the new count. */
  bump(runId: string): Promise<number>;
}

/** {@link ResumeStore} in a table `run_resumes` of the gateway's SQLite file, written through its group commit. */
export class SqliteResumeStore implements ResumeStore {
  private readonly statements: StatementCache;

  /** @param db The gateway's connection (the `runs` table lives there too). @param commits Its write queue. */
  constructor(
    db: Database.Database,
    private readonly commits?: GroupCommit,
  ) {
    this.statements = new StatementCache(db);
    db.exec("CREATE TABLE IF NOT EXISTS run_resumes (run_id TEXT PRIMARY KEY, spec TEXT NOT NULL, resumes INTEGER NOT NULL DEFAULT 0)");
  }

  async put(runId: string, spec: string): Promise<void> {
    await commitWith(this.commits, () => this.statements.get("INSERT OR REPLACE INTO run_resumes (run_id, spec, resumes) VALUES (?, ?, 0)").run(runId, spec));
  }

  async delete(runId: string): Promise<void> {
    await commitWith(this.commits, () => this.statements.get("DELETE FROM run_resumes WHERE run_id = ?").run(runId));
  }

  async orphans(): Promise<OrphanRun[]> {
    return commitWith(this.commits, () => {
      this.statements.get("DELETE FROM run_resumes WHERE run_id NOT IN (SELECT run_id FROM runs WHERE status IN ('pending', 'running'))").run();
      return this.statements
        .get("SELECT r.run_id, r.thread_id, s.spec, s.resumes FROM runs r JOIN run_resumes s ON s.run_id = r.run_id WHERE r.status IN ('pending', 'running') ORDER BY r.created_at")
        .all() as OrphanRun[];
    });
  }

  async withoutSpec(): Promise<string[]> {
    return commitWith(this.commits, () =>
      (this.statements.get("SELECT run_id FROM runs WHERE status IN ('pending', 'running') AND run_id NOT IN (SELECT run_id FROM run_resumes)").all() as { run_id: string }[]).map((r) => r.run_id),
    );
  }

  async bump(runId: string): Promise<number> {
    return commitWith(this.commits, () => {
      this.statements.get("UPDATE run_resumes SET resumes = resumes + 1 WHERE run_id = ?").run(runId);
      return (this.statements.get("SELECT resumes FROM run_resumes WHERE run_id = ?").get(runId) as { resumes: number } | undefined)?.resumes ?? 0;
    });
  }
}
