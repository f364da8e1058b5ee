// Deferred drops of finished runs' state (control objects, event logs) on one timer per queue instead of one per
// run. A timer created inside a request keeps that request's async context alive until it fires: its
// AsyncLocalStorage stores (the run's scope with its logger, the pinned AppConfig, LangChain's RunnableConfig) are
// copied onto the Timeout. At a few hundred runs per second and a minute of retention that is tens of thousands of
// contexts held for nothing, so the queue's timer is always armed from the context in which the queue was made.
import { AsyncResource } from "node:async_hooks";

/**
 * Calls `onExpire(key)` once a key's deadline has passed. Scheduling a key again moves its deadline (the latest
 * call wins); {@link cancel} forgets it. Deadlines fire in order on a single unref'd timer, armed outside any
 * request's async context, so nothing the caller's context holds is retained while a key waits.
 *
 * Not a general TTL cache: the keys' values live with the caller, which is told when to drop them.
 */
export class ExpiryQueue<K> {
  /** Key -> its current deadline (ms since epoch). */
  private readonly deadlines = new Map<K, number>();
  /** (deadline, key) in insertion order; an entry whose deadline no longer matches {@link deadlines} is stale. */
  private readonly queue: Array<{ at: number; key: K }> = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  /** The async context the queue was created in (a server's startup), where its timer is armed. */
  private readonly scope = new AsyncResource("ExpiryQueue");

  /** @param onExpire Called with each key whose deadline passed (exceptions are swallowed: the queue goes on). */
  constructor(private readonly onExpire: (key: K) => void) {}

  /** Number of keys waiting. */
  get size(): number {
    return this.deadlines.size;
  }

  /**
   * Schedules `key` to expire in `delayMs` (ms; negative counts as 0), replacing any earlier schedule of it.
   * Deadlines are kept in call order, so callers should use one delay per queue; a shorter delay after longer ones
   * still fires, only no earlier than the entries ahead of it.
   */
  schedule(key: K, delayMs: number): void {
    const at = Date.now() + Math.max(0, delayMs);
    this.deadlines.set(key, at);
    this.queue.push({ at, key });
    if (at < this.timerAt) this.arm(at);
  }

  /** Whether `key` is scheduled and its deadline has not been swept yet. */
  has(key: K): boolean {
    return this.deadlines.has(key);
  }

  /** Forgets `key` without calling `onExpire`. */
  cancel(key: K): void {
    this.deadlines.delete(key);
  }

  /** Stops the timer and forgets every key (`onExpire` is not called). */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.deadlines.clear();
    this.queue.length = 0;
    this.head = 0;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.scope.runInAsyncScope(() => setTimeout(() => this.sweep(), Math.max(0, at - Date.now())));
    this.timer.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    while (this.head < this.queue.length) {
      const { at, key } = this.queue[this.head];
      if (at > now) break;
      this.head++;
      if (this.deadlines.get(key) !== at) continue;
      this.deadlines.delete(key);
      try {
        this.onExpire(key);
      } catch {
        // One caller's failure must not stop the others' expiry.
      }
    }
    // Compacts the consumed prefix once it dominates, keeping pushes O(1) amortised.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    if (this.head < this.queue.length) this.arm(this.queue[this.head].at);
  }
}
