// The Redis StreamBridge (DeerFlow runtime/stream_bridge, redis flavour): run events in Redis Streams, so any
// gateway process can replay and follow a run that another process executes.
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RedisWriteQueue } from "./redis-write-queue.js";
import { MemoryStreamBridge, parseEventSeq, retainedCount, type BridgeItem, type SubscribeOptions } from "./stream-bridge.js";

/** Stream entry name that marks the end of a run's events (never sent to clients). */
const END_EVENT = "__end__";

/** How long a remote subscriber keeps retrying its reads while Redis is unreachable, in ms, before it gives up. */
const READ_OUTAGE_MS = 30_000;

/** Options of {@link RedisStreamBridge}. */
export interface RedisStreamBridgeOptions {
  /** Command connection (shared; commands are pipelined in order). Blocking reads use duplicates of it. */
  redis: Redis;
  /** Key prefix, e.g. `deerflow:`. */
  prefix: string;
  /** Events retained per run, locally and (approximately, `MAXLEN ~`) in Redis. */
  queueMaxSize: number;
  /** Upper bound on how long a run's stream lives in Redis, in ms (a process that dies never ends its runs). */
  ttlMs: number;
  logger: Logger;
  /** Longest single blocking read of a remote subscriber, in ms (default 5000). */
  blockMs?: number;
}

/** Redis key of a run's event stream. */
export const streamKey = (prefix: string, runId: string) => `${prefix}run:${runId}:events`;
/** Redis key that says a run's stream was opened (its value: the id base, epoch ms). */
export const openKey = (prefix: string, runId: string) => `${prefix}run:${runId}:open`;

/**
 * Appends an error event and the end marker to a run's stream after its last entry; used for a run whose process
 * died. KEYS: stream, open. ARGV: error JSON, end event name, maxlen, ttl ms. Returns 1 when appended.
 */
export const APPEND_END_SCRIPT = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local base = redis.call('GET', KEYS[2])
local seq = 0
if #last > 0 then
  local ms, s = string.match(last[1][1], '^(%d+)-(%d+)$')
  if last[1][2][2] == ARGV[2] then return 0 end
  base = ms
  seq = tonumber(s) + 1
end
if not base then return 0 end
redis.call('XADD', KEYS[1], base .. '-' .. seq, 'e', 'error', 'd', ARGV[1])
redis.call('XADD', KEYS[1], base .. '-' .. (seq + 1), 'e', ARGV[2], 'd', 'null')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
`;

/**
 * {@link StreamBridge} over Redis Streams. The process that runs a run keeps its events in memory too (its own
 * subscribers - usually the client that started the run - are served locally with no Redis round trip) and
 * appends each one to the stream `<prefix>run:<id>:events` (`XADD ... MAXLEN ~ queueMaxSize`, fire-and-forget
 * but ordered on one connection). Any other process serves `subscribe` from Redis: replay with `XRANGE`
 * semantics strictly after `Last-Event-ID`, then blocking `XREAD` on its own connection until the end marker.
 * Event ids are `<open_ms>-<seq>`: the same in memory and in Redis, and valid Redis stream ids, so a client can
 * resume on any process. A finished run's stream expires with the cleanup delay; every stream expires after
 * `ttlMs` at most.
 */
export class RedisStreamBridge extends MemoryStreamBridge {
  private readonly base = new Map<string, number>();
  private readonly readers = new Set<Redis>();
  /** Runs resumed here after another process ran them: Redis has their earlier events, so subscribers read it. */
  private readonly resumed = new Set<string>();
  private closed = false;
  /** Event appends and expiries, in order, retried across a Redis restart. */
  private readonly writes: RedisWriteQueue;

  constructor(private readonly options: RedisStreamBridgeOptions) {
    super(options.queueMaxSize);
    this.writes = new RedisWriteQueue({ redis: options.redis, logger: options.logger });
  }

  private baseOf(runId: string): number {
    let base = this.base.get(runId);
    if (base === undefined) {
      base = Date.now();
      this.base.set(runId, base);
    }
    return base;
  }

  protected override eventId(runId: string, seq: number): string {
    return `${this.baseOf(runId)}-${seq}`;
  }

  private fail = (err: Error) => this.options.logger.error({ err: err.message }, "redis stream bridge write failed");

  /** Declares the run locally and in Redis; resolves once Redis has it (a join on another process may follow at once). */
  override async open(runId: string): Promise<void> {
    super.open(runId);
    const { redis, prefix, ttlMs } = this.options;
    // A failed write is logged, not thrown: the run is already admitted and must still run (joins elsewhere may then
    // end early).
    await redis.set(openKey(prefix, runId), String(this.baseOf(runId)), "PX", ttlMs).catch(this.fail);
  }

  /**
   * Re-declares a resumed run's stream: its id base and next sequence number are read from Redis (the open key and
   * the last entry), so its ids go on where the previous process stopped and a client's `Last-Event-ID` holds.
   */
  override async reopen(runId: string): Promise<void> {
    const { redis, prefix, ttlMs } = this.options;
    const key = streamKey(prefix, runId);
    const [[, base], [, last]] = (await redis.multi().get(openKey(prefix, runId)).xrevrange(key, "+", "-", "COUNT", 1).exec())! as unknown as [[unknown, string | null], [unknown, [string, string[]][]]];
    const lastId = last[0]?.[0];
    this.base.set(runId, Number(base ?? lastId?.split("-")[0] ?? Date.now()));
    super.open(runId);
    this.runs.get(runId)!.offset = lastId ? parseEventSeq(lastId)! + 1 : 0;
    this.resumed.add(runId);
    await redis.set(openKey(prefix, runId), String(this.baseOf(runId)), "PX", ttlMs).catch(this.fail);
  }

  protected override publishJson(runId: string, event: string, json: string): string {
    const id = super.publishJson(runId, event, json);
    const { prefix, queueMaxSize, ttlMs } = this.options;
    const key = streamKey(prefix, runId);
    this.writes.push(["xadd", key, "MAXLEN", "~", queueMaxSize, id, "e", event, "d", json]);
    if (id.endsWith("-0")) this.writes.push(["pexpire", key, ttlMs]);
    return id;
  }

  override publishEnd(runId: string): void {
    const log = this.runs.get(runId);
    const seq = log ? log.offset + retainedCount(log) : 0;
    super.publishEnd(runId);
    this.writes.push(["xadd", streamKey(this.options.prefix, runId), `${this.baseOf(runId)}-${seq}`, "e", END_EVENT, "d", "null"]);
  }

  override cleanup(runId: string, delayMs: number): void {
    super.cleanup(runId, delayMs);
    if (!this.runs.has(runId)) this.base.delete(runId);
    const { prefix } = this.options;
    const ms = Math.max(1, Math.round(delayMs));
    // Queued after the run's events: an expiry set before a late XADD would leave the stream without one.
    this.writes.push(["pexpire", streamKey(prefix, runId), ms]);
    this.writes.push(["pexpire", openKey(prefix, runId), ms]);
  }

  protected override expire(runId: string): void {
    super.expire(runId);
    this.resumed.delete(runId);
    this.base.delete(runId);
  }

  /**
   * Stops remote readers and waits (up to `drainMs`, default 5 s) for every queued write to reach Redis; what Redis
   * has not confirmed by then is logged and abandoned (the caller closes the connection).
   */
  override async close(drainMs = 5_000): Promise<void> {
    this.closed = true;
    super.close();
    for (const reader of this.readers) reader.disconnect();
    this.readers.clear();
    if (!(await this.writes.drain(drainMs))) this.options.logger.error({ pending: this.writes.size }, "redis unreachable at shutdown: stream events not written");
    this.writes.stop();
  }

  override subscribe(runId: string, options: SubscribeOptions = {}): AsyncGenerator<BridgeItem> {
    return this.runs.has(runId) && !this.resumed.has(runId) ? super.subscribe(runId, options) : this.subscribeRemote(runId, options);
  }

  /** Serves a run held by another process (or by nobody any more) from its Redis stream. */
  private async *subscribeRemote(runId: string, options: SubscribeOptions): AsyncGenerator<BridgeItem> {
    const { redis, prefix } = this.options;
    const key = streamKey(prefix, runId);
    const [[, first], [, last], [, opened]] = (await redis.multi().xrange(key, "-", "+", "COUNT", 1).xrevrange(key, "+", "-", "COUNT", 1).exists(openKey(prefix, runId)).exec())! as [
      unknown,
      [string, string[]][],
    ][] as unknown as [[unknown, [string, string[]][]], [unknown, [string, string[]][]], [unknown, number]];
    if (!first.length && !opened) {
      yield { kind: "end" };
      return;
    }
    const firstSeq = first.length ? parseEventSeq(first[0][0])! : 0;
    const lastSeq = last.length ? parseEventSeq(last[0][0])! : -1;
    const requested = parseEventSeq(options.lastEventId);
    let cursor = "0-0";
    let expected = firstSeq;
    // As in memory: a malformed id, or one past anything this run published, replays everything retained.
    if (requested !== null && requested <= lastSeq) {
      if (requested + 1 < firstSeq) {
        yield this.gap(runId, options.lastEventId ?? null, first[0][0], last[0][0]);
        return;
      }
      cursor = `${first[0][0].split("-")[0]}-${requested}`;
      expected = requested + 1;
    }
    const reader = redis.duplicate({ enableAutoPipelining: false, lazyConnect: true });
    this.readers.add(reader);
    const stop = () => reader.disconnect();
    options.signal?.addEventListener("abort", stop, { once: true });
    try {
      await reader.connect();
      while (!options.signal?.aborted && !this.closed) {
        const reply = await this.readBlocking(reader, runId, cursor, options.signal);
        if (reply === "gone") return;
        if (reply === "expired") {
          yield { kind: "end" };
          return;
        }
        if (!reply) continue;
        for (const [id, fields] of reply) {
          const seq = parseEventSeq(id)!;
          // Trimmed past our cursor while we were reading: the events in between are gone.
          if (seq > expected) {
            yield this.gap(runId, cursor, id, null);
            return;
          }
          cursor = id;
          expected = seq + 1;
          const event = fields[1];
          if (event === END_EVENT) {
            yield { kind: "end" };
            return;
          }
          yield { kind: "event", event: { id, event, json: fields[3] } };
        }
      }
    } catch (err) {
      // A disconnect we asked for (abort, close) ends the iteration quietly; anything else is logged.
      if (!options.signal?.aborted && !this.closed) this.options.logger.warn({ err: (err as Error).message, run_id: runId }, "redis stream read failed");
    } finally {
      options.signal?.removeEventListener("abort", stop);
      this.readers.delete(reader);
      reader.disconnect();
    }
  }

  /**
   * One blocking read of `key` after `cursor`: the entries, null when nothing came (or Redis was briefly
   * unreachable: the read is retried with backoff, the reader reconnecting on its own), `expired` when the stream
   * and its open key are gone (its process died long ago), `gone` when the reader was stopped or Redis stayed
   * unreachable for `READ_OUTAGE_MS` (the stream then closes without `end`, and the client resumes with
   * Last-Event-ID).
   */
  private async readBlocking(reader: Redis, runId: string, cursor: string, signal?: AbortSignal): Promise<[string, string[]][] | null | "expired" | "gone"> {
    const { redis, prefix } = this.options;
    const key = streamKey(prefix, runId);
    const outageSince = Date.now();
    for (let failures = 0; ; failures++) {
      if (signal?.aborted || this.closed) return "gone";
      try {
        const reply = (await reader.xread("COUNT", 256, "BLOCK", this.options.blockMs ?? 5_000, "STREAMS", key, cursor)) as [string, [string, string[]][]][] | null;
        if (reply) return reply[0][1];
        // Nothing for a while: the stream may have expired (its process died long ago) - then it is over.
        return (await redis.exists(key, openKey(prefix, runId))) ? null : "expired";
      } catch (err) {
        if (signal?.aborted || this.closed || (err as Error).name === "ReplyError") throw err;
        if (Date.now() - outageSince > READ_OUTAGE_MS) {
          this.options.logger.warn({ err: (err as Error).message, run_id: runId }, "redis unreachable: remote stream closed without end");
          return "gone";
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 1_000)));
      }
    }
  }

  private gap(runId: string, requested: string | null, earliest: string | null, latest: string | null): BridgeItem {
    return {
      kind: "gap",
      data: {
        code: "stream_replay_gap",
        run_id: runId,
        requested_event_id: requested,
        earliest_available_event_id: earliest,
        latest_available_event_id: latest,
        recovery: "reload_durable_state",
      },
    };
  }
}
