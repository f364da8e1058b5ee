// The token usage ledger on PostgreSQL (`database.backend: postgres`): one `token_usage` table every gateway process
// adds to, so a user's daily token quota is the service's, not each process's. Additions are batched: a model call
// never waits on a round trip, and one statement writes every addition of a short window, whatever the run count.
import type pg from "pg";
import { utcDay, withTotal, type DailyUsage, type TokenLedger } from "./usage-ledger.js";

/** Serialises the DDL of processes starting together (CREATE TABLE IF NOT EXISTS races with itself). */
const LEDGER_DDL_LOCK = 0x0de3f20;

/** How long an addition waits for others to share its statement, in ms (default of {@link PgUsageLedger}). */
export const LEDGER_FLUSH_MS = 100;

interface Pending {
  user: string;
  day: string;
  input: number;
  output: number;
  calls: number;
}

/**
 * Token usage per user and UTC day in PostgreSQL. {@link add} queues the addition; within `flushMs` one
 * `INSERT ... SELECT FROM unnest(...) ON CONFLICT (user_id, day) DO UPDATE SET x = token_usage.x + excluded.x` writes
 * the whole queue (summed per user and day), so the database does every addition and concurrent processes never lose
 * one. Reads first write this process's queue, so a quota check here sees every addition made here before it, and
 * another process's additions once their window has passed (at most `flushMs` late).
 */
export class PgUsageLedger implements TokenLedger {
  private pending = new Map<string, Pending>();
  private waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The last batch written (batches are written one after another, in order). */
  private written: Promise<void> = Promise.resolve();

  /** @param flushMs how long an addition waits for others to share its statement, in ms. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly flushMs: number = LEDGER_FLUSH_MS,
  ) {}

  /** Creates the `token_usage` table when missing (idempotent, serialised across processes). */
  static async migrate(pool: pg.Pool): Promise<void> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [LEDGER_DDL_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS token_usage (
        user_id TEXT NOT NULL, day TEXT NOT NULL, input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0, model_calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user_id, day))`);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Queues one model call's tokens for `userId` on `day` (default today, UTC, taken when called); negative counts
   * are clamped to 0.
   * @returns A promise settled once the batch holding the addition is committed.
   * @throws (rejects with) PostgreSQL's error when the batch cannot be written (its additions are lost).
   */
  add(userId: string, tokens: { input: number; output: number }, day: string = utcDay()): Promise<void> {
    const key = `${userId}\u0000${day}`;
    const row = this.pending.get(key) ?? { user: userId, day, input: 0, output: 0, calls: 0 };
    row.input += Math.max(0, Math.round(tokens.input));
    row.output += Math.max(0, Math.round(tokens.output));
    row.calls += 1;
    this.pending.set(key, row);
    this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.flushMs);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Writes the queue now. @returns once every addition queued before the call is committed (or has failed). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return this.written;
    const rows = [...this.pending.values()];
    const waiters = this.waiters;
    this.pending = new Map();
    this.waiters = [];
    const write = this.written.catch(() => undefined).then(() => this.write(rows));
    write.then(() => waiters.forEach((w) => w.resolve()), (err: unknown) => waiters.forEach((w) => w.reject(err)));
    this.written = write;
    return write;
  }

  private async write(rows: Pending[]): Promise<void> {
    await this.pool.query({
      name: "token_usage_add",
      text: `INSERT INTO token_usage (user_id, day, input_tokens, output_tokens, model_calls)
        SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::int[])
        ON CONFLICT (user_id, day) DO UPDATE SET input_tokens = token_usage.input_tokens + excluded.input_tokens,
          output_tokens = token_usage.output_tokens + excluded.output_tokens, model_calls = token_usage.model_calls + excluded.model_calls`,
      values: [rows.map((r) => r.user), rows.map((r) => r.day), rows.map((r) => r.input), rows.map((r) => r.output), rows.map((r) => r.calls)],
    });
  }

  /**
   * `userId`'s usage of `day` (default today, UTC), across every process; zeros when nothing was spent.
   * @throws PostgreSQL's error when the table cannot be read.
   */
  async get(userId: string, day: string = utcDay()): Promise<DailyUsage> {
    await this.flush().catch(() => undefined);
    const { rows } = await this.pool.query<RowOf>({ name: "token_usage_day", text: `${SELECT} WHERE user_id = $1 AND day = $2`, values: [userId, day] });
    return rows[0] ? usageOf(rows[0]) : withTotal({ day, input_tokens: 0, output_tokens: 0, model_calls: 0 });
  }

  /** `userId`'s usage of the last `days` UTC days (today included), newest first; days without usage are left out. */
  async recent(userId: string, days: number, now: Date = new Date()): Promise<DailyUsage[]> {
    await this.flush().catch(() => undefined);
    const from = utcDay(new Date(now.getTime() - (days - 1) * 86_400_000));
    const { rows } = await this.pool.query<RowOf>(`${SELECT} WHERE user_id = $1 AND day >= $2 ORDER BY day DESC`, [userId, from]);
    return rows.map(usageOf);
  }
}

const SELECT = "SELECT day, input_tokens, output_tokens, model_calls FROM token_usage";
type RowOf = { day: string; input_tokens: string; output_tokens: string; model_calls: number };
// BIGINT columns come back as strings from pg.
const usageOf = (r: RowOf): DailyUsage => withTotal({ day: r.day, input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), model_calls: r.model_calls });
