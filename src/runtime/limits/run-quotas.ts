// Per-user run quotas: concurrent runs and the daily token quota. RunService.start takes a slot right before the
// thread admits the run (RunManager.admit); the take is atomic in its store (run-slots.ts: process memory, or
// PostgreSQL shared by every process), so two requests can never both take the last slot.
import type { AppConfig } from "../../config/schema.js";
import { RateLimitedError } from "../../errors.js";
import type { GatewayMetrics } from "../../observability/metrics.js";
import { LocalRunSlots, type RunSlots } from "./run-slots.js";
import { secondsToUtcMidnight, type TokenLedger } from "./usage-ledger.js";

/** Seconds a client refused for concurrency should wait before retrying (runs last seconds to minutes). */
const CONCURRENCY_RETRY_AFTER_SECONDS = 5;

/** Enforces `limits.max_concurrent_runs_per_user` and `daily_token_quota` over a ledger and a slot store. */
export class RunQuotas {
  /**
   * @param ledger the token ledger (the quota reads today's total from it).
   * @param slots where runs in flight are counted (default: this process's memory).
   */
  constructor(
    private readonly ledger: TokenLedger,
    private readonly metrics?: GatewayMetrics,
    private readonly slots: RunSlots = new LocalRunSlots(),
  ) {}

  /** Runs `userId` has pending or running now (in every process, when the slots are shared). */
  async activeRuns(userId: string): Promise<number> {
    return this.slots.held(userId);
  }

  /**
   * Takes a run slot for `userId`, or refuses. Call it right before the thread admits the run
   * (`RunManager.admit`), and call the returned release exactly once when the run has finished (or when the
   * admission that follows fails).
   * @throws RateLimitedError (429) when the user has `max_concurrent_runs_per_user` runs in flight (Retry-After 5 s)
   *   or has spent `daily_token_quota` tokens today (Retry-After: seconds to the next UTC midnight).
   * @throws the store's error when the ledger or the slots cannot be read (the run is refused, never let through).
   */
  async acquire(userId: string, config: AppConfig): Promise<() => void> {
    const { max_concurrent_runs_per_user: maxRuns, daily_token_quota: quota } = config.limits;
    if (quota) {
      const used = (await this.ledger.get(userId)).total_tokens;
      if (used >= quota) {
        this.metrics?.limitRejections.inc({ limit: "token_quota" });
        throw new RateLimitedError(`Daily token quota exhausted: ${used} of ${quota} tokens used today (UTC); it resets at the next UTC midnight`, secondsToUtcMidnight());
      }
    }
    const slot = await this.slots.take(userId, maxRuns ?? null);
    if ("held" in slot) {
      this.metrics?.limitRejections.inc({ limit: "concurrent_runs" });
      throw new RateLimitedError(`Too many concurrent runs: ${slot.held} of ${maxRuns} allowed per user are in flight; retry when one has finished`, CONCURRENCY_RETRY_AFTER_SECONDS);
    }
    return () => {
      slot.release();
      // A run's last additions are written as it ends, not a batch window later (other processes read them).
      void this.ledger.flush?.().catch(() => undefined);
    };
  }
}
