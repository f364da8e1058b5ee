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
import { attemptsKey, cancelledKey, jobsKey, RESUME_CLAIM_SCRIPT, resumeLimitMessage } from "../stream/run-handover.js";
import { newId } from "../ids.js";

/**
 * Admits a run on a thread. KEYS: thread zset, in-flight hash, sequence. ARGV: run id, process id, strategy,
 * thread id, heartbeat key prefix, resume spec (JSON, or empty: the run is never resumed; KEYS[4] is the jobs hash). In-flight runs whose process has no heartbeat do not count (the reaper marks
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
if ARGV[6] ~= '' then redis.call('HSET', KEYS[4], ARGV[1], ARGV[6]) end
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
  /** Times a run whose process died (or handed it over) is resumed by another before it is marked `error` (default 3). */
  maxResumes?: number;
}

type ControlMessage =
  | { type: "cancel"; runId: string; action: CancelAction; ack: string }
  | { type: "done"; runId: string; threadId: string }
  | { type: "handover"; processId: string };

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
  override readonly resumesRuns = true;
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
  private subscriberClosed = false;
  /** Resumes a run taken over here ({@link setResumer}); none: dead processes' runs are only reaped. */
  private resumer?: (runId: string, spec: string, resumedBefore: number) => Promise<void>;
  /** Ids of this process's in-flight runs that have a resume spec (only these are handed over). */
  private readonly resumable = new Set<string>();

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
    // A process leaving hands its unfinished runs over: take them now rather than at the next reaper pass.
    if (message.type === "handover") return void this.reap();
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
      4,
      this.threadKey(input.threadId),
      this.inflightKey,
      `${prefix}runs:seq`,
      jobsKey(prefix),
      runId,
      this.processId,
      input.strategy,
      input.threadId,
      `${prefix}proc:`,
      input.resumeSpec ?? "",
    )) as string[];
    if (reply[0] === "conflict") throw new ConflictError(`Thread ${input.threadId} already has an active run`);
    const inFlight = reply.slice(1);
    if (input.resumeSpec) this.resumable.add(runId);
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
    this.resumable.delete(runId);
    // A run handed over stays in flight in Redis, under this (leaving) process, until another takes it.
    if (wasFinished || !run || run.handedOver) return;
    this.finishedHere.schedule(runId, FINISHED_RUN_RETENTION_MS);
    const { redis } = this.options;
    const done: ControlMessage = { type: "done", runId, threadId: run.record.thread_id };
    this.track(
      redis
        .multi()
        .zrem(this.threadKey(run.record.thread_id), runId)
        .hdel(this.inflightKey, runId)
        .hdel(jobsKey(this.options.prefix), runId)
        .hdel(attemptsKey(this.options.prefix), runId)
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
    // First, so that a resume racing this cancel (the owner died) never starts the run again: it reaps it instead.
    await redis.set(cancelledKey(prefix, record.run_id), action, "PX", this.options.streamTtlMs ?? 86_400_000);
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
   * One reaper pass: every in-flight run whose process has no heartbeat is resumed here when it can be (see
   * {@link resumeOrReap}), else claimed (once, across processes) and ended: stored as `interrupted` (or `error`
   * past `maxResumes`), its thread set `idle` unless another live run holds it, its stream given an `error` event
   * and its end, and waiting admissions woken.
   */
  async reap(): Promise<number> {
    if (this.reaping || this.stopped) return 0;
    this.reaping = true;
    let reaped = 0;
    try {
      const { redis } = this.options;
      const entries = Object.entries(await redis.hgetall(this.inflightKey));
      if (!entries.length) return 0;
      const owners = [...new Set(entries.map(([, v]) => v.split("|")[0]))];
      const alive = await redis.mget(...owners.map((o) => this.procKey(o)));
      // Never this process: its runs are alive while it runs this pass, whatever its heartbeat key says.
      const dead = new Set(owners.filter((o, i) => alive[i] === null && o !== this.processId));
      for (const [runId, value] of entries) {
        if (dead.has(value.split("|")[0]) && (await this.resumeOrReap(runId, value))) reaped++;
      }
    } catch (err) {
      this.options.logger.error({ err: (err as Error).message }, "reaper pass failed");
    } finally {
      this.reaping = false;
    }
    return reaped;
  }

  /**
   * A run whose owner is dead: taken over and resumed by this process when it has a resume spec, a resumer is set,
   * no cancel came first and it was resumed fewer than `maxResumes` times; else reaped. True when it was handled
   * here (resumed or reaped), false when another process took it first.
   */
  private async resumeOrReap(runId: string, value: string): Promise<boolean> {
    const { redis, prefix, logger } = this.options;
    const [owner, threadId] = value.split("|");
    let reason = "The gateway process running this run stopped";
    let status: "interrupted" | "error" = "interrupted";
    const spec = this.resumer ? await redis.hget(jobsKey(prefix), runId) : null;
    if (spec && this.resumer) {
      const keys = [this.inflightKey, attemptsKey(prefix), cancelledKey(prefix, runId)];
      const [verdict, n] = (await redis.eval(RESUME_CLAIM_SCRIPT, 3, ...keys, runId, value, `${this.processId}|${threadId}`, String(this.options.maxResumes ?? 3))) as string[];
      if (verdict === "gone") return false;
      if (verdict === "resume") {
        // n counts this resume: the run was resumed n - 1 times before, and this is its attempt n + 1.
        logger.warn({ run_id: runId, thread_id: threadId, process: owner, attempt: Number(n) + 1 }, "resuming a run whose process stopped");
        await this.resumer(runId, spec, Number(n) - 1).catch((err: Error) => logger.error({ err: err.message, run_id: runId }, "resuming the run failed"));
        return true;
      }
      if (verdict === "cancelled") reason = "Cancelled while the gateway process running it had stopped";
      if (verdict === "exhausted") {
        reason = resumeLimitMessage(Number(n));
        status = "error";
      }
    }
    if ((await redis.eval(CLAIM_SCRIPT, 2, this.inflightKey, this.threadKey(threadId), runId)) !== 1) return false;
    await this.endLostRun(runId, threadId, reason, status);
    logger.warn({ run_id: runId, thread_id: threadId, process: owner }, "reaped a run whose process stopped");
    return true;
  }

  /** Ends a run no process runs any more: its record, its thread, its stream (an `error` frame, then the end). */
  private async endLostRun(runId: string, threadId: string, reason: string, status: "interrupted" | "error"): Promise<void> {
    const { redis, prefix } = this.options;
    const record = await this.options.runs.get(runId);
    if (record && (record.status === "pending" || record.status === "running")) {
      await this.options.runs.save({ ...record, status, updated_at: new Date().toISOString(), error: reason });
    }
    await redis.multi().hdel(jobsKey(prefix), runId).hdel(attemptsKey(prefix), runId).exec();
    if (!(await this.hasInFlight(threadId))) await this.options.threads.setStatus(threadId, "idle");
    const name = status === "error" ? "ResumeLimitExceeded" : "ProcessLost";
    const error = JSON.stringify({ message: reason, name, error: name });
    await redis.eval(APPEND_END_SCRIPT, 2, streamKey(prefix, runId), openKey(prefix, runId), error, "__end__", "0", String(this.options.streamTtlMs ?? 86_400_000));
    await redis.publish(this.channel, JSON.stringify({ type: "done", runId, threadId } satisfies ControlMessage));
  }

  /**
   * Sets who resumes a run taken over from a dead (or leaving) process: called with the run id, its resume spec
   * (JSON) and how many times it was resumed before; it adopts the run ({@link adopt}) and runs it again.
   */
  setResumer(resumer: (runId: string, spec: string, resumedBefore: number) => Promise<void>): void {
    this.resumer = resumer;
  }

  /**
   * Adopts a run this process took over (see {@link RunManager.adopt}); a cancel that raced the take-over (its
   * mark is in Redis) cancels it at once, so it never runs again.
   */
  override async adopt(record: RunRecord): Promise<ActiveRun> {
    const run = await super.adopt(record);
    this.resumable.add(record.run_id);
    const cancelled = await this.options.redis.get(cancelledKey(this.options.prefix, record.run_id));
    if (cancelled) this.cancelRun(run, cancelled === "rollback" ? "rollback" : "interrupt");
    return run;
  }

  /**
   * Graceful leave (SIGTERM, docs/durable-runs.md): lets in-flight runs finish for up to `graceMs`, then hands the
   * resumable rest over: each stops here without an outcome (record still `running`, stream open, checkpoints
   * settled), this process's heartbeat is removed and a `handover` message makes the live processes take them at
   * once and resume them from their last checkpoint. What cannot be resumed is interrupted ({@link drain}).
   */
  async handOver(graceMs: number): Promise<void> {
    await settleWithin(this.inFlight(), graceMs);
    const left = this.inFlight().filter((run) => this.resumable.has(run.record.run_id));
    for (const run of left) {
      run.handedOver = true;
      run.controller.abort(new Error("Run handed over to another gateway process"));
    }
    await settleWithin(left, 5_000);
    await Promise.all([...this.pending]);
    clearInterval(this.heartbeat);
    clearInterval(this.reaper);
    this.stopped = true;
    const { redis } = this.options;
    await redis.del(this.procKey(this.processId)).catch(() => undefined);
    if (left.length) await redis.publish(this.channel, JSON.stringify({ type: "handover", processId: this.processId } satisfies ControlMessage)).catch(() => undefined);
    this.options.logger.info({ handed_over: left.length }, "handed unfinished runs over");
    await this.drain(2_000);
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
    if (this.subscriberClosed) return;
    this.subscriberClosed = true;
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

/** Resolves when every run in `runs` has finished, or after `ms` (ms), whichever comes first. */
async function settleWithin(runs: ActiveRun[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(runs.map((r) => r.done)), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
