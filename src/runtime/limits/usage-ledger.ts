// The token usage ledger: tokens spent per user and UTC day, in the gateway database (the `token_usage` table):
// the SQLite file here, PostgreSQL (pg-usage-ledger.ts) when `database.backend: postgres` shares it between processes.
import type Database from "better-sqlite3";
import { commitWith, type GroupCommit } from "../persistence/sqlite/group-commit.js";

/** One user's usage on one UTC day. */
export interface DailyUsage {
  /** `YYYY-MM-DD` (UTC). */
  day: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** Model calls that reported usage. */
  model_calls: number;
}

/** The UTC day of `date` as `YYYY-MM-DD`. */
export const utcDay = (date: Date = new Date()): string => date.toISOString().slice(0, 10);

/** Seconds from `now` to the next UTC midnight (when a daily quota resets), at least 1. */
export function secondsToUtcMidnight(now: Date = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/**
 * What the quotas and `GET /api/usage` need of a ledger: the SQLite {@link UsageLedger} answers synchronously, the
 * PostgreSQL one (pg-usage-ledger.ts) with promises; callers `await` either.
 */
export interface TokenLedger {
  /** Adds one model call's tokens to `userId`'s usage of `day` (default today, UTC); settles once committed. */
  add(userId: string, tokens: { input: number; output: number }, day?: string): Promise<void>;
  /** `userId`'s usage of `day` (default today, UTC), every addition made before the call included; zeros when none. */
  get(userId: string, day?: string): DailyUsage | Promise<DailyUsage>;
  /** `userId`'s usage of the last `days` UTC days (today included), newest first; days without usage left out. */
  recent(userId: string, days: number, now?: Date): DailyUsage[] | Promise<DailyUsage[]>;
  /** Writes queued additions now (a ledger that batches them); called when a run ends. */
  flush?(): Promise<void>;
}

/**
 * Token usage per user and UTC day, in SQLite. Each model call adds its tokens with one `INSERT ... ON CONFLICT DO UPDATE SET
 * x = x + excluded.x` statement, so concurrent runs (and processes sharing the file) never lose an update: the
 * database does the addition, there is no read-modify-write in JavaScript. With the gateway file's
 * {@link GroupCommit}, an addition joins the transaction of the checkpoints and run rows written in the same
 * event-loop turn instead of committing alone; reads commit the queue first, so a quota check sees every addition
 * made before it.
 */
export class UsageLedger implements TokenLedger {
  private readonly addStmt: Database.Statement;
  private readonly dayStmt: Database.Statement;
  private readonly recentStmt: Database.Statement;

  /**
   * @param db The connection holding the `token_usage` table (created when missing).
   * @param commits The connection's write queue, when it has one (additions are then grouped; see the class).
   */
  constructor(
    db: Database.Database,
    private readonly commits?: GroupCommit,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS token_usage (
      user_id TEXT NOT NULL,
      day TEXT NOT NULL,
      input_tokens INTEGER NOT NULL DEFAULT 0,
      output_tokens INTEGER NOT NULL DEFAULT 0,
      model_calls INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (user_id, day)
    )`);
    this.addStmt = db.prepare(`INSERT INTO token_usage (user_id, day, input_tokens, output_tokens, model_calls) VALUES (?, ?, ?, ?, 1)
      ON CONFLICT (user_id, day) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens, model_calls = model_calls + 1`);
    this.dayStmt = db.prepare("SELECT day, input_tokens, output_tokens, model_calls FROM token_usage WHERE user_id = ? AND day = ?");
    this.recentStmt = db.prepare("SELECT day, input_tokens, output_tokens, model_calls FROM token_usage WHERE user_id = ? AND day >= ? ORDER BY day DESC");
  }

  /**
   * Adds one model call's tokens to `userId`'s usage of `day` (default today, UTC, taken when called). Negative counts
   * are clamped to 0. Without a write queue the row is written before this returns.
   * @returns A promise settled once the addition is committed.
   * @throws (rejects with) SQLite's error when the row cannot be written.
   */
  add(userId: string, tokens: { input: number; output: number }, day: string = utcDay()): Promise<void> {
    const input = Math.max(0, Math.round(tokens.input));
    const output = Math.max(0, Math.round(tokens.output));
    return commitWith(this.commits, () => void this.addStmt.run(userId, day, input, output));
  }

  /** `userId`'s usage of `day` (default today, UTC); zeros when nothing was spent. */
  get(userId: string, day: string = utcDay()): DailyUsage {
    this.commits?.flush();
    const row = this.dayStmt.get(userId, day) as Omit<DailyUsage, "total_tokens"> | undefined;
    return withTotal(row ?? { day, input_tokens: 0, output_tokens: 0, model_calls: 0 });
  }

  /** `userId`'s usage of the last `days` UTC days (today included), newest first; days without usage are left out. */
  recent(userId: string, days: number, now: Date = new Date()): DailyUsage[] {
    const from = utcDay(new Date(now.getTime() - (days - 1) * 86_400_000));
    this.commits?.flush();
    return (this.recentStmt.all(userId, from) as Omit<DailyUsage, "total_tokens">[]).map(withTotal);
  }
}

/** `row` with its `total_tokens` (input + output). */
export const withTotal = (row: Omit<DailyUsage, "total_tokens">): DailyUsage => ({ ...row, total_tokens: row.input_tokens + row.output_tokens });
