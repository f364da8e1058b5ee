// Per-user run quotas: concurrent runs and the daily token quota. RunService.start takes a slot synchronously, right
// before the thread admits the run (RunManager.admit), so two requests can never both take the last slot.
import type { AppConfig } from "../../config/schema.js";
import { RateLimitedError } from "../../errors.js";
import type { GatewayMetrics } from "../../observability/metrics.js";
import { secondsToUtcMidnight, type UsageLedger } from "./usage-ledger.js";

/** Seconds a client refused for concurrency should wait before retrying (runs last seconds to minutes). */
const CONCURRENCY_RETRY_AFTER_SECONDS = 5;

/** Counts each user's runs in flight and enforces `limits.max_concurrent_runs_per_user` and `daily_token_quota`. */
export class RunQuotas {
  private readonly active = new Map<string, number>();

  constructor(
    private readonly ledger: UsageLedger,
    private readonly metrics?: GatewayMetrics,
  ) {}

  /** Runs `userId` has pending or running now. */
  activeRuns(userId: string): number {
    return this.active.get(userId) ?? 0;
  }

  /**
   * Takes a run slot for `userId`, or refuses. Synchronous: call it right before the thread admits the run
   * (`RunManager.admit`), with no `await` in between, and call the returned release exactly once when the run has
   * finished (or when the admission that follows fails).
   * @throws RateLimitedError (429) when the user has `max_concurrent_runs_per_user` runs in flight (Retry-After 5 s)
   *   or has spent `daily_token_quota` tokens today (Retry-After: seconds to the next UTC midnight).
   */
  acquire(userId: string, config: AppConfig): () => void {
    const { max_concurrent_runs_per_user: maxRuns, daily_token_quota: quota } = config.limits;
    if (quota) {
      const used = this.ledger.get(userId).total_tokens;
      if (used >= quota) {
        this.metrics?.limitRejections.inc({ limit: "token_quota" });
        throw new RateLimitedError(`Daily token quota exhausted: ${used} of ${quota} tokens used today (UTC); it resets at the next UTC midnight`, secondsToUtcMidnight());
      }
    }
    const current = this.activeRuns(userId);
    if (maxRuns && current >= maxRuns) {
      this.metrics?.limitRejections.inc({ limit: "concurrent_runs" });
      throw new RateLimitedError(`Too many concurrent runs: ${current} of ${maxRuns} allowed per user are in flight; retry when one has finished`, CONCURRENCY_RETRY_AFTER_SECONDS);
    }
    this.active.set(userId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.active.get(userId) ?? 1) - 1;
      if (left > 0) this.active.set(userId, left);
      else this.active.delete(userId);
    };
  }
}
