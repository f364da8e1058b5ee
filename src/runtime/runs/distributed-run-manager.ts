// Run admission, cancellation and liveness across gateway processes that share Redis and a database: the
// multitask strategies hold per thread whichever process a request lands on, a cancel reaches the process running
// the run, and the runs of a process that died are marked and their threads freed within a bounded time.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { ConflictError } from "../../errors.js";
import type { RunRepository, ThreadRepository } from "../persistence/repositories.js";
import { APPEND_END_SCRIPT, openKey, streamKey } from "../stream/redis-stream-bridge.js";
import { FINISHED_RUN_RETENTION_MS, RunManager, type ActiveRun, type AdmitInput, type CancelAction } from "./run-manager.js";
import type { RunRecord } from "../persistence/repositories.js";
import { ExpiryQueue } from "../stream/expiry-queue.js";
import { newId } from "../ids.js";

/**
 * Admits a run on a thread. KEYS: thread zset, in-flight hash, sequence. ARGV: run id, process id, strategy,
 * thread id, heartbeat key prefix. In-flight runs whose process has no heartbeat do not count (the reaper marks
 * them); the admitting process's own runs always count (its heartbeat may lag under load, its runs do not). Returns `{"conflict"}` for `reject` on a busy thread, else `{"ok", <ids of the live in-flight runs>...}`.
 */
const ADMIT_SCRIPT = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local alive = {'ok'}
for _, id in ipairs(ids) do
  local v = redis.call('HGET', KEYS[2], id)
  if v then
    local owner = string.match(v, '^([^|]*)')
    if owner == ARGV[2] or redis.call('EXISTS', ARGV[5] .. owner) == 1 then table.insert(alive, id) end
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
if ARGV[3] == 'reject' and #alive > 1 then return {'conflict'} end
redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[3]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. '|' .. ARGV[4])
return alive
`;

/** Claims a dead run for reaping, once. KEYS: in-flight hash, thread zset. ARGV: run id. Returns 1 when claimed. */
const CLAIM_SCRIPT = `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
return 0
`;

/** Options of {@link DistributedRunManager}. */
export interface DistributedRunManagerOptions {
  /** Command connection (shared with the stream bridge). */
  redis: Redis;
  /** Key prefix, e.g. `deerflow:`. */
  prefix: string;
  runs: RunRepository;
  threads: ThreadRepository;
  logger: Logger;
  /**
   * Heartbeat lease in ms: a process that has not renewed its heartbeat for this long is dead, and its runs are
   * marked `interrupted` (threads `idle`) by the next reaper pass of any live process. Renewed every third of it.
   */
  leaseMs: number;
  /** How long a remote cancel waits for the owning process to confirm, in ms (default 2000). */
  cancelAckMs?: number;
  /** Stream retention bound in ms, for the end marker the reaper appends (default one day). */
  streamTtlMs?: number;
}

type ControlMessage = { type: "cancel"; runId: string; action: CancelAction; ack: string } | { type: "done"; runId: string; threadId: string };

/**
 * A {@link RunManager} whose admission state lives in Redis: per thread, a sorted set of in-flight run ids
 * (`<prefix>thread:<id>:runs`, ordered by admission), each owned by a process (`<prefix>runs:inflight`:
 * run id -> `<process id>|<thread id>`) that keeps a heartbeat key (`<prefix>proc:<id>`, `PX leaseMs`). Admission
 * is one Lua script, so `reject` is atomic across processes; `interrupt`/`rollback` send a cancel to the owners of
 * the in-flight runs; the new run starts when they have all left the set (`enqueue` too). Control messages go over
 * pub/sub (`<prefix>control`): `cancel` (the owner aborts the run and confirms on a one-shot list) and `done`
 * (wakes waiting admissions). Every process reaps runs whose owner's heartbeat expired.
 */
export class DistributedRunManager extends RunManager {
  /** This process's id in Redis. */
  readonly processId = randomUUID();
  private readonly subscriber: Redis;
  private readonly waiters = new Set<() => void>();
  private readonly pending = new Set<Promise<unknown>>();
  /** Ids of runs this process finished within {@link FINISHED_RUN_RETENTION_MS}: a late remote cancel is acknowledged. */
  private readonly finishedHere = new ExpiryQueue<string>(() => undefined);
  private heartbeat?: NodeJS.Timeout;
  private reaper?: NodeJS.Timeout;
  private reaping = false;
  private stopped = false;

  private constructor(private readonly options: DistributedRunManagerOptions) {
    super(options.runs);
    this.subscriber = options.redis.duplicate({ enableAutoPipelining: false });
  }

  /**
   * Starts a manager: heartbeat written, control channel subscribed, reaper scheduled.
   * @throws the Redis error when Redis cannot be reached.
   */
  static async start(options: DistributedRunManagerOptions): Promise<DistributedRunManager> {
    const manager = new DistributedRunManager(options);
    await manager.beat();
    await manager.subscriber.subscribe(manager.channel);
    manager.subscriber.on("message", (_channel: string, message: string) => manager.onControl(message));
    const every = Math.max(50, Math.floor(options.leaseMs / 3));
    manager.heartbeat = setInterval(() => void manager.beat().catch((err: Error) => options.logger.error({ err: err.message }, "heartbeat failed")), every);
    manager.reaper = setInterval(() => void manager.reap(), every);
    manager.heartbeat.unref();
    manager.reaper.unref();
    return manager;
  }

  private get channel() {
    return `${this.options.prefix}control`;
  }
  private get inflightKey() {
    return `${this.options.prefix}runs:inflight`;
  }
  private threadKey(threadId: string) {
    return `${this.options.prefix}thread:${threadId}:runs`;
  }
  private procKey(processId: string) {
    return `${this.options.prefix}proc:${processId}`;
  }

  private async beat(): Promise<void> {
    if (!this.stopped) await this.options.redis.set(this.procKey(this.processId), "1", "PX", this.options.leaseMs);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise)).catch(() => undefined);
    return promise;
  }

  private wake(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  private onControl(raw: string): void {
    let message: ControlMessage;
    try {
      message = JSON.parse(raw) as ControlMessage;
    } catch {
      return;
    }
    if (message.type === "done") return this.wake();
    const run = this.live.get(message.runId);
    // A run that finished here a moment ago is acknowledged too: its canceller saw it in flight and waits.
    if (!run && !this.finishedHere.has(message.runId)) return;
    void this.track(
      (async () => {
        if (run && !run.finished) {
          this.cancelRun(run, message.action);
          // Stored before the confirmation, so the cancelling process reads the new status right after.
          if (message.action === "interrupt") await this.store.save(run.record);
        }
        await this.options.redis.multi().rpush(message.ack, "1").pexpire(message.ack, 10_000).exec();
      })().catch((err: Error) => this.options.logger.error({ err: err.message, run_id: message.runId }, "remote cancel failed")),
    );
  }

  /**
   * Ids among `ids` still in flight in a process with a live heartbeat. This process's own runs are judged by its
   * own state, never by its heartbeat key (which may lag when the event loop is busy).
   */
  private async liveAmong(ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const { redis } = this.options;
    const owners = (await redis.hmget(this.inflightKey, ...ids)) as (string | null)[];
    const candidates = ids.map((id, i) => ({ id, owner: owners[i]?.split("|")[0] })).filter((c) => c.owner);
    const own = candidates.filter((c) => c.owner === this.processId && this.live.get(c.id)?.finished === false).map((c) => c.id);
    const others = candidates.filter((c) => c.owner !== this.processId);
    if (!others.length) return own;
    const alive = await redis.mget(...others.map((c) => this.procKey(c.owner!)));
    return [...own, ...others.filter((_, i) => alive[i] !== null).map((c) => c.id)];
  }

  /** Resolves when none of `ids` is in flight any more (woken by `done` messages, re-checked every second). */
  private async waitGone(ids: string[], signal?: AbortSignal): Promise<void> {
    while (!signal?.aborted && !this.stopped) {
      if (!(await this.liveAmong(ids)).length) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 1_000);
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener("abort", done);
          resolve();
        }
        this.waiters.add(done);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
  }

  /**
   * Admits a run across processes (see the class comment).
   * @throws ConflictError "Thread <id> already has an active run" for `reject` while any process runs one.
   */
  override async admit(input: AdmitInput): Promise<ActiveRun> {
    const { redis, prefix } = this.options;
    const runId = newId();
    const reply = (await redis.eval(
      ADMIT_SCRIPT,
      3,
      this.threadKey(input.threadId),
      this.inflightKey,
      `${prefix}runs:seq`,
      runId,
      this.processId,
      input.strategy,
      input.threadId,
      `${prefix}proc:`,
    )) as string[];
    if (reply[0] === "conflict") throw new ConflictError(`Thread ${input.threadId} already has an active run`);
    const inFlight = reply.slice(1);
    // Stored before the in-flight runs are cancelled: a store error releases the admission and cancels nothing.
    const run = this.register(input, runId, this.waitGone(inFlight));
    try {
      await this.store.save(run.record);
    } catch (err) {
      this.finish(runId);
      throw err;
    }
    if (input.strategy === "interrupt" || input.strategy === "rollback") {
      for (const id of inFlight) {
        const local = this.live.get(id);
        if (local) this.cancelRun(local, input.strategy);
        else await redis.publish(this.channel, JSON.stringify({ type: "cancel", runId: id, action: input.strategy, ack: `${prefix}ack:${randomUUID()}` }));
      }
    }
    return run;
  }

  override finish(runId: string): void {
    const run = this.live.get(runId);
    const wasFinished = !run || run.finished;
    super.finish(runId);
    if (wasFinished || !run) return;
    this.finishedHere.schedule(runId, FINISHED_RUN_RETENTION_MS);
    const { redis } = this.options;
    const done: ControlMessage = { type: "done", runId, threadId: run.record.thread_id };
    this.track(
      redis
        .multi()
        .zrem(this.threadKey(run.record.thread_id), runId)
        .hdel(this.inflightKey, runId)
        .publish(this.channel, JSON.stringify(done))
        .exec()
        .catch((err: Error) => this.options.logger.error({ err: err.message, run_id: runId }, "cannot release the run in redis")),
    );
  }

  /**
   * Cancels a run held by another process: publishes the cancel and waits (at most `cancelAckMs`) for the owner to
   * confirm that it aborted the run, so nothing of the run (a model call) starts after the answer.
   */
  protected override async cancelElsewhere(record: RunRecord, action: CancelAction, wait: boolean): Promise<void> {
    const { redis, prefix } = this.options;
    if (!(await this.liveAmong([record.run_id])).length) return;
    const ack = `${prefix}ack:${randomUUID()}`;
    const reader = redis.duplicate({ enableAutoPipelining: false });
    try {
      await redis.publish(this.channel, JSON.stringify({ type: "cancel", runId: record.run_id, action, ack }));
      await reader.blpop(ack, Math.max(0.01, (this.options.cancelAckMs ?? 2_000) / 1000));
    } finally {
      reader.disconnect();
    }
    if (wait) await this.waitGone([record.run_id]);
  }

  override async settled(runId: string): Promise<void> {
    await super.settled(runId);
    const record = await this.store.get(runId);
    if (record) await this.waitGone([runId]);
  }

  override async hasInFlight(threadId: string): Promise<boolean> {
    if (await super.hasInFlight(threadId)) return true;
    const ids = await this.options.redis.zrange(this.threadKey(threadId), "0", "-1");
    return (await this.liveAmong(ids)).length > 0;
  }

  /**
   * One reaper pass: every in-flight run whose process has no heartbeat is claimed (once, across processes),
   * stored as `interrupted`, its thread set `idle` unless another live run holds it, its stream given an `error`
   * event and its end, and waiting admissions are woken.
   */
  async reap(): Promise<number> {
    if (this.reaping || this.stopped) return 0;
    this.reaping = true;
    let reaped = 0;
    try {
      const { redis, prefix, logger } = this.options;
      const entries = Object.entries(await redis.hgetall(this.inflightKey));
      if (!entries.length) return 0;
      const owners = [...new Set(entries.map(([, v]) => v.split("|")[0]))];
      const alive = await redis.mget(...owners.map((o) => this.procKey(o)));
      // Never this process: its runs are alive while it runs this pass, whatever its heartbeat key says.
      const dead = new Set(owners.filter((o, i) => alive[i] === null && o !== this.processId));
      for (const [runId, value] of entries) {
        const [owner, threadId] = value.split("|");
        if (!dead.has(owner)) continue;
        if ((await redis.eval(CLAIM_SCRIPT, 2, this.inflightKey, this.threadKey(threadId), runId)) !== 1) continue;
        reaped++;
        const record = await this.options.runs.get(runId);
        if (record && (record.status === "pending" || record.status === "running")) {
          await this.options.runs.save({ ...record, status: "interrupted", updated_at: new Date().toISOString(), error: "The gateway process running this run stopped" });
        }
        if (!(await this.hasInFlight(threadId))) await this.options.threads.setStatus(threadId, "idle");
        const error = JSON.stringify({ message: "The gateway process running this run stopped", name: "ProcessLost", error: "ProcessLost" });
        await redis.eval(APPEND_END_SCRIPT, 2, streamKey(prefix, runId), openKey(prefix, runId), error, "__end__", "0", String(this.options.streamTtlMs ?? 86_400_000));
        await redis.publish(this.channel, JSON.stringify({ type: "done", runId, threadId } satisfies ControlMessage));
        logger.warn({ run_id: runId, thread_id: threadId, process: owner }, "reaped a run whose process stopped");
      }
    } catch (err) {
      this.options.logger.error({ err: (err as Error).message }, "reaper pass failed");
    } finally {
      this.reaping = false;
    }
    return reaped;
  }

  /**
   * Shutdown: lets in-flight runs finish for up to `budgetMs` (their events keep flowing to Redis, where clients
   * that reconnected to another process follow them), then interrupts what is left (2 s more at most).
   */
  override async drain(budgetMs: number): Promise<void> {
    const runs = this.inFlight();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((r) => r.done)), new Promise((r) => (timer = setTimeout(r, budgetMs)))]);
    clearTimeout(timer);
    await super.drain(2_000);
    await Promise.all([...this.pending]);
  }

  /** Stops the heartbeat and the reaper, removes this process's heartbeat and unsubscribes. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.heartbeat);
    clearInterval(this.reaper);
    this.finishedHere.clear();
    this.wake();
    await Promise.all([...this.pending]);
    await this.options.redis.del(this.procKey(this.processId)).catch(() => undefined);
    this.subscriber.disconnect();
  }
}
