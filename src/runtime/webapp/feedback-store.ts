// Per-run feedback (DeerFlow app/gateway/routers/feedback.py + persistence/feedback): one JSON file per thread,
// `<home>/data/feedback/<thread_id>.json`, written atomically; in PostgreSQL (persistence/postgres/pg-feedback-store.ts)
// when `database.backend: postgres` shares it between processes. Each user has at most one feedback per run (the
// web app's thumbs up/down upserts it).
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../../config/atomic-write.js";

/** One stored feedback (upstream `FeedbackResponse`). `rating` is +1 or -1; `created_at` ISO. */
export interface Feedback {
  feedback_id: string;
  run_id: string;
  thread_id: string;
  user_id: string;
  message_id: string | null;
  rating: number;
  comment: string | null;
  created_at: string;
}

/** What a feedback upsert carries (upstream `FeedbackCreateRequest`). */
export interface FeedbackInput {
  rating: number;
  comment?: string | null;
  message_id?: string | null;
}

/**
 * Where feedback is kept: the file store answers synchronously, the PostgreSQL one with promises; callers `await`
 * either. Every method is scoped to one user: no user reads or removes another's feedback.
 */
export interface FeedbackRepository {
  /** The user's feedback on a run, newest first. */
  list(threadId: string, runId: string, userId: string): Feedback[] | Promise<Feedback[]>;
  /** Creates or replaces the user's feedback on a run (id and `created_at` kept; `message_id` kept when not given). */
  upsert(threadId: string, runId: string, userId: string, input: FeedbackInput): Feedback | Promise<Feedback>;
  /** Deletes the user's feedback on a run (all of it, or one `feedbackId`); returns how many rows went. */
  delete(threadId: string, runId: string, userId: string, feedbackId?: string): number | Promise<number>;
  /** Latest feedback per run of the thread for one user (for the message feed). */
  byRun(threadId: string, userId: string): Map<string, Feedback> | Promise<Map<string, Feedback>>;
}

/** File-backed feedback of every thread. Thread ids must be validated by the caller (safe path segments). */
export class FeedbackStore implements FeedbackRepository {
  constructor(private readonly dir: string) {}

  private file(threadId: string): string {
    return path.join(this.dir, `${threadId}.json`);
  }

  /** Every feedback of the thread (any user), oldest first. */
  private load(threadId: string): Feedback[] {
    try {
      const rows = JSON.parse(readFileSync(this.file(threadId), "utf8")) as unknown;
      return Array.isArray(rows) ? (rows as Feedback[]) : [];
    } catch {
      return [];
    }
  }

  private save(threadId: string, rows: Feedback[]): void {
    mkdirSync(this.dir, { recursive: true });
    atomicWriteFile(this.file(threadId), `${JSON.stringify(rows, null, 2)}\n`);
  }

  /** The user's feedback on a run, newest first. */
  list(threadId: string, runId: string, userId: string): Feedback[] {
    return this.load(threadId).filter((f) => f.run_id === runId && f.user_id === userId).reverse();
  }

  /** Creates or replaces the user's feedback on a run; returns it. */
  upsert(threadId: string, runId: string, userId: string, input: FeedbackInput): Feedback {
    const rows = this.load(threadId);
    const existing = rows.find((f) => f.run_id === runId && f.user_id === userId);
    const row: Feedback = {
      feedback_id: existing?.feedback_id ?? randomUUID(),
      run_id: runId,
      thread_id: threadId,
      user_id: userId,
      message_id: input.message_id ?? existing?.message_id ?? null,
      rating: input.rating,
      comment: input.comment ?? null,
      created_at: existing?.created_at ?? new Date().toISOString(),
    };
    this.save(threadId, [...rows.filter((f) => f !== existing), row]);
    return row;
  }

  /**
   * Deletes the user's feedback on a run (all of it, or one `feedbackId`).
   * @returns how many rows were removed.
   */
  delete(threadId: string, runId: string, userId: string, feedbackId?: string): number {
    const rows = this.load(threadId);
    const kept = rows.filter((f) => !(f.run_id === runId && f.user_id === userId && (!feedbackId || f.feedback_id === feedbackId)));
    if (kept.length !== rows.length) this.save(threadId, kept);
    return rows.length - kept.length;
  }

  /** Latest feedback per run of the thread for one user (for the message feed). */
  byRun(threadId: string, userId: string): Map<string, Feedback> {
    const out = new Map<string, Feedback>();
    for (const f of this.load(threadId)) if (f.user_id === userId) out.set(f.run_id, f);
    return out;
  }
}
