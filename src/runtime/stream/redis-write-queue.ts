// The Redis stream bridge's writes, in order and retried: a run's events must reach Redis exactly once and in order
// even when Redis restarts mid-run (ioredis gives up on a queued command after `maxRetriesPerRequest` reconnect
// attempts, which a restart easily outlasts; a dropped XADD is an event other processes never see).
import type { Redis } from "ioredis";
import type { Logger } from "pino";

/** One Redis command: its name and arguments, e.g. `["xadd", key, id, "e", event, "d", json]`. */
export type RedisWrite = [command: "xadd" | "pexpire", ...args: (string | number)[]];

/** Options of {@link RedisWriteQueue}. */
export interface RedisWriteQueueOptions {
  redis: Redis;
  logger: Logger;
  /** Most writes held while Redis is unreachable; beyond it the oldest are dropped (logged). Default 100 000. */
  maxPending?: number;
  /** Most writes per transaction. Default 512. */
  batchSize?: number;
  /** Longest wait between two retries, in ms. Default 1000. */
  maxBackoffMs?: number;
}

// Redis answers a repeated XADD of an id it already has with this error: the write had been applied (its reply was
// lost with the connection), so it counts as done. Event ids are explicit and increasing, which makes XADD idempotent.
const ALREADY_WRITTEN = /equal or smaller than the target stream top item/;

/**
 * An ordered write-behind queue. Writes are sent in batches, each one `MULTI ... EXEC` (applied whole or not at
 * all); a batch whose transaction fails (connection lost, Redis restarting) is sent again, with backoff
 * (100 ms doubling to `maxBackoffMs`), before anything queued after it. A command Redis itself rejects is logged
 * and skipped (it would fail again), except an XADD of an id already written, which is a success.
 */
export class RedisWriteQueue {
  private readonly pending: RedisWrite[] = [];
  private sending = false;
  private failures = 0;
  private dropped = 0;
  private readonly idle = new Set<() => void>();
  private retryTimer?: NodeJS.Timeout;

  constructor(private readonly options: RedisWriteQueueOptions) {}

  /** Number of writes not yet confirmed by Redis. */
  get size(): number {
    return this.pending.length;
  }

  /** Queues a write after every earlier one. */
  push(write: RedisWrite): void {
    this.pending.push(write);
    const max = this.options.maxPending ?? 100_000;
    if (this.pending.length > max) {
      this.pending.splice(0, this.pending.length - max);
      if (this.dropped++ % 1000 === 0) this.options.logger.error({ pending: max }, "redis unreachable too long: oldest stream events dropped");
    }
    this.pump();
  }

  /** Resolves once every queued write is confirmed, or after `timeoutMs` (false then). */
  async drain(timeoutMs: number): Promise<boolean> {
    if (!this.pending.length && !this.sending) return true;
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.idle.delete(onIdle);
        resolve(ok);
      };
      const onIdle = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.idle.add(onIdle);
    });
  }

  /** Stops retrying (the writes still pending are abandoned). */
  stop(): void {
    clearTimeout(this.retryTimer);
    this.pending.length = 0;
  }

  private pump(): void {
    if (this.sending || this.retryTimer || !this.pending.length) return;
    this.sending = true;
    const batch = this.pending.slice(0, this.options.batchSize ?? 512);
    const tx = this.options.redis.multi();
    for (const [command, ...args] of batch) (tx[command] as (...a: (string | number)[]) => unknown)(...args);
    tx.exec().then(
      (replies) => this.confirmed(batch, replies ?? []),
      // Redis refused the transaction itself (EXECABORT): sending it again would fail again.
      (err: Error) => (err.name === "ReplyError" ? this.confirmed(batch, [[err, null]]) : this.failed(err)),
    );
  }

  private confirmed(batch: RedisWrite[], replies: [Error | null, unknown][]): void {
    for (const [i, [err]] of replies.entries()) {
      if (err && !ALREADY_WRITTEN.test(err.message)) this.options.logger.error({ err: err.message, command: batch[i][0] }, "redis stream bridge write failed");
    }
    // The queue may have been cut from the front meanwhile (maxPending): remove only what is still this batch.
    const sent = this.pending[0] === batch[0] ? batch.length : 0;
    this.pending.splice(0, sent);
    if (this.failures) this.options.logger.info({ retries: this.failures }, "redis stream bridge writes resumed");
    this.failures = 0;
    this.sending = false;
    if (!this.pending.length) for (const resolve of [...this.idle]) resolve();
    this.pump();
  }

  private failed(err: Error): void {
    this.sending = false;
    if (this.failures++ === 0) this.options.logger.warn({ err: err.message, pending: this.pending.length }, "redis unreachable: stream events held and retried");
    const delay = Math.min(100 * 2 ** Math.min(this.failures - 1, 10), this.options.maxBackoffMs ?? 1_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.pump();
    }, delay);
    this.retryTimer.unref();
  }
}
