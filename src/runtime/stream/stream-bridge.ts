// Port of DeerFlow runtime/stream_bridge (memory implementation): decouples the run worker from SSE consumers.
import { AsyncResource } from "node:async_hooks";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { ExpiryQueue } from "./expiry-queue.js";

/**
 * One published event. `id` is `<epoch_ms>-<seq>`, seq counting from 0 per run; `json` is the payload serialized
 * once at publish (what the SSE `data:` line carries). Retained events are one string each, not an object tree:
 * a finished run's events stay 60 s for replay, and strings are cheaper to hold and to collect.
 */
export interface BridgeEvent {
  id: string;
  event: string;
  json: string;
}

/** What a subscriber receives: events, then `end` (run finished) or `gap` (its cursor was evicted). */
export type BridgeItem = { kind: "event"; event: BridgeEvent } | { kind: "end" } | { kind: "gap"; data: Record<string, unknown> };

/** Options of {@link StreamBridge.subscribe}. */
export interface SubscribeOptions {
  /** Resume strictly after this id; malformed or foreign ids replay everything retained. */
  lastEventId?: string | null;
  /** Stops the iteration (the consumer went away). */
  signal?: AbortSignal;
}

/**
 * The producer/consumer seam between the run worker and any number of readers (SSE, wait, join). The memory
 * implementation serves one process; a Redis implementation can serve several replicas behind the same interface.
 */
export interface StreamBridge {
  /**
   * Declares a run's stream at admission, so subscribers wait for its events instead of ending at once. A
   * networked bridge resolves once other processes can see the declaration.
   */
  open(runId: string): void | Promise<void>;
  /**
   * Re-declares the stream of a run this process resumes after another ran it (networked bridges only): new events
   * continue its ids after the last one published, and subscribers are served from the shared store.
   */
  reopen?(runId: string): Promise<void>;
  /**
   * Appends an event to the run's log and wakes its subscribers. Returns the event id.
   * @param json `data` already serialized (`JSON.stringify(data)`), when the caller has it: not serialized again.
   */
  publish(runId: string, event: string, data: unknown, json?: string): string;
  /** Marks the run's stream finished; subscribers drain what is left and then get `end`. */
  publishEnd(runId: string): void;
  /** Iterates a run's events from `lastEventId` (or the start of retention), then `end` or `gap`. */
  subscribe(runId: string, options?: SubscribeOptions): AsyncIterable<BridgeItem>;
  /** Whether the run's log is still held. */
  exists(runId: string): boolean;
  /** Drops the run's log after `delayMs` (ms). */
  cleanup(runId: string, delayMs: number): void;
  /** Drops every log and timer (and, for a networked bridge, flushes what is queued and disconnects). */
  close(): void | Promise<void>;
}

/** One run's retained events in this process. */
export interface RunLog {
  /** The retained events; {@link PACKED_EVENTS} once they are {@link packed}. */
  events: BridgeEvent[];
  /**
   * A finished run's events, packed with those of other runs that finished around the same time (see
   * {@link MemoryStreamBridge.cleanup}): this log's are entry `index` of the group; read with {@link eventsOf}.
   */
  packed: { group: PackedGroup; index: number; count: number } | undefined;
  /** Sequence number of `events[0]`. */
  offset: number;
  ended: boolean;
  /** Subscribers waiting for the next event; created by the first one that waits. */
  waiters: Set<() => void> | undefined;
  /** Subscribers iterating the log now: a finished log is packed only once none is left (they read it as it is). */
  readers: number;
  /** Whether {@link MemoryStreamBridge.cleanup} was asked for (the log is packed when its last reader leaves). */
  cleanupRequested: boolean;
  /** Whether the log waits in the bridge's pack queue. */
  packQueued: boolean;
  /**
   * Epoch ms the log was reopened at, for a run this process resumed after a restart (0: never): ids from before
   * it were published by the process that died, and read as foreign (everything retained is replayed).
   */
  reopenedAt: number;
}

/**
 * The events of several finished runs, deflated together: a JSON array with one array of events per run, one byte
 * per char. A string rather than a Buffer: no Buffer and ArrayBuffer objects (~180 bytes) per group. Shared by the
 * logs it holds, and collected with the last of them.
 */
export interface PackedGroup {
  data: string;
}

/** The `events` of every packed log: frozen, so nothing appends to a packed log by mistake. */
const PACKED_EVENTS: BridgeEvent[] = Object.freeze([]) as unknown as BridgeEvent[];

/**
 * Deflate settings of packed logs: level 1 (levels 3 and 6 gain under 7%); an 8 KiB window and memLevel 6 give the
 * same size for a quarter less CPU than the defaults.
 */
const PACK_OPTIONS = { level: 1, windowBits: 13, memLevel: 6 } as const;

/**
 * Finished logs deflated in one call. Deflating runs one at a time cost ~80 µs a run, half of it setting up zlib's
 * stream, and packed a typical run's 7 KB of frames to 1.2 KB; 8 runs together cost ~20 µs a run and hold ~0.5 KB
 * each, the frames of one run repeating much of the previous one's. Larger groups gain little, and a replay
 * inflates its whole group.
 */
export const PACK_GROUP_MAX = 16;

/** How long (ms) a finished log may wait for others to be packed with; a full group is packed at once. */
export const PACK_DELAY_MS = 100;

/** A log's retained events, unpacking a packed log (the caller keeps the array; the log stays packed). */
export function eventsOf(log: RunLog): BridgeEvent[] {
  if (!log.packed) return log.events;
  const runs = JSON.parse(inflateRawSync(Buffer.from(log.packed.group.data, "latin1"), { windowBits: PACK_OPTIONS.windowBits }).toString("utf8")) as BridgeEvent[][];
  return runs[log.packed.index];
}

/** How many events a log retains. */
export function retainedCount(log: RunLog): number {
  return log.packed ? log.packed.count : log.events.length;
}

/** Parses the sequence part of an event id (`<epoch_ms>-<seq>`), or null when malformed. */
export function parseEventSeq(id: string | null | undefined): number | null {
  const m = /^\d+-(\d+)$/.exec(id ?? "");
  return m ? Number(m[1]) : null;
}

/** The epoch ms of an event id `<epoch_ms>-<seq>` (0 for a malformed one). */
function eventTime(id: string | null | undefined): number {
  const m = /^(\d+)-\d+$/.exec(id ?? "");
  return m ? Number(m[1]) : 0;
}

/**
 * In-memory {@link StreamBridge}: a per-run log bounded to `queueMaxSize` events (oldest evicted, watermark
 * advanced; `end` is a flag and never evicts data). A subscriber whose cursor falls below the watermark gets one
 * `gap` and stops; the run is not affected.
 */
export class MemoryStreamBridge implements StreamBridge {
  protected readonly runs = new Map<string, RunLog>();
  /** Finished runs' logs waiting to be dropped (see {@link cleanup}). */
  private readonly expiry = new ExpiryQueue<string>((runId) => this.expire(runId));
  /** Finished logs waiting to be packed together (see {@link packPending}). */
  private packQueue: Array<{ runId: string; log: RunLog }> = [];
  private packTimer: NodeJS.Timeout | undefined;
  /**
   * The async context the bridge was created in, where the pack timer is armed: a timer armed in a run's context
   * would hold that context (its stores) until it fires.
   */
  private readonly scope = new AsyncResource("MemoryStreamBridge");

  /** @param queueMaxSize Events retained per run (default 256). */
  constructor(private readonly queueMaxSize = 256) {}

  /** The id of the run's event number `seq` (0-based): `<epoch_ms>-<seq>`. */
  protected eventId(_runId: string, seq: number): string {
    return `${Date.now()}-${seq}`;
  }

  protected log(runId: string): RunLog {
    let log = this.runs.get(runId);
    if (!log) {
      // Every field set here, in one order: all logs share one hidden class and no property array.
      log = { events: [], packed: undefined, offset: 0, ended: false, waiters: undefined, readers: 0, cleanupRequested: false, packQueued: false, reopenedAt: 0 };
      this.runs.set(runId, log);
    }
    return log;
  }

  private wake(log: RunLog): void {
    if (!log.waiters?.size) return;
    for (const w of log.waiters) w();
    log.waiters.clear();
  }

  open(runId: string): void {
    this.log(runId);
  }

  /**
   * Declares the stream of a run resumed here after a restart (the events the previous process published are
   * lost): a client reconnecting with an id of the previous process gets every event of the resumed run.
   */
  async reopen(runId: string): Promise<void> {
    this.log(runId).reopenedAt = Date.now();
  }

  publish(runId: string, event: string, data: unknown, json?: string): string {
    return this.publishJson(runId, event, json ?? JSON.stringify(data ?? null));
  }

  /** {@link publish} with the payload already serialized. @returns the event id. */
  protected publishJson(runId: string, event: string, json: string): string {
    const log = this.log(runId);
    if (log.packed) {
      // Nothing publishes after the end; should something, the log is unpacked rather than split.
      log.events = eventsOf(log);
      log.packed = undefined;
    }
    const seq = log.offset + log.events.length;
    const id = this.eventId(runId, seq);
    log.events.push({ id, event, json });
    if (log.events.length > this.queueMaxSize) {
      log.events.shift();
      log.offset++;
    }
    this.wake(log);
    return id;
  }

  publishEnd(runId: string): void {
    const log = this.log(runId);
    log.ended = true;
    this.wake(log);
  }

  exists(runId: string): boolean {
    return this.runs.has(runId);
  }

  /**
   * Schedules the drop of the run's log in `delayMs` (ms). A finished run's events are packed for the rest of their
   * retention, together with those of other runs that finish within {@link PACK_DELAY_MS} (deflate, ~0.5 KB for a
   * typical run's 7 KB of frames; see {@link PACK_GROUP_MAX}): under steady load a minute of finished runs is most of
   * what the process holds, and the replay of a finished run is rare (a reload, a reconnect). A log that still has
   * readers is packed when its last reader leaves.
   */
  cleanup(runId: string, delayMs: number): void {
    const log = this.runs.get(runId);
    if (!log) return;
    log.cleanupRequested = true;
    if (!log.readers) this.queuePack(runId, log);
    this.expiry.schedule(runId, delayMs);
  }

  /** Drops a finished run's log once its retention (see {@link cleanup}) has passed. */
  protected expire(runId: string): void {
    this.runs.delete(runId);
  }

  /** Queues a finished log for packing (see {@link cleanup}); a no-op for a running, empty, packed or queued log. */
  private queuePack(runId: string, log: RunLog): void {
    if (!log.ended || log.packed || log.packQueued || !log.events.length) return;
    log.packQueued = true;
    this.packQueue.push({ runId, log });
    if (this.packQueue.length >= PACK_GROUP_MAX) {
      this.packPending();
    } else if (!this.packTimer) {
      this.packTimer = this.scope.runInAsyncScope(() => setTimeout(() => this.packPending(), PACK_DELAY_MS));
      this.packTimer.unref();
    }
  }

  /**
   * Packs every queued log now, in one group (normally on a timer, {@link PACK_DELAY_MS} after the first of them
   * was queued, or when {@link PACK_GROUP_MAX} wait). A log that got a reader, or was dropped, since it was queued
   * is left out (a reader that leaves queues it again).
   */
  packPending(): void {
    clearTimeout(this.packTimer);
    this.packTimer = undefined;
    const queued = this.packQueue;
    this.packQueue = [];
    const logs: RunLog[] = [];
    for (const { runId, log } of queued) {
      log.packQueued = false;
      if (log.ended && !log.packed && !log.readers && log.events.length && this.runs.get(runId) === log) logs.push(log);
    }
    if (!logs.length) return;
    // A string copy of zlib's output (a view of a 16 KiB chunk, which a Buffer slice would keep alive).
    const group: PackedGroup = { data: deflateRawSync(JSON.stringify(logs.map((log) => log.events)), PACK_OPTIONS).toString("latin1") };
    logs.forEach((log, index) => {
      log.packed = { group, index, count: log.events.length };
      log.events = PACKED_EVENTS;
      log.waiters = undefined;
    });
  }

  close(): void {
    clearTimeout(this.packTimer);
    this.packTimer = undefined;
    this.packQueue = [];
    this.expiry.clear();
    for (const log of this.runs.values()) {
      log.ended = true;
      this.wake(log);
    }
    this.runs.clear();
  }

  async *subscribe(runId: string, options: SubscribeOptions = {}): AsyncGenerator<BridgeItem> {
    const log = this.runs.get(runId);
    if (!log) {
      yield { kind: "end" };
      return;
    }
    // Counted while it reads: a finished log is packed once its last reader leaves (see cleanup). The loop is inline,
    // not a delegated generator: `yield*` between async generators costs a promise per event.
    log.readers++;
    try {
      const requested = log.reopenedAt && eventTime(options.lastEventId) < log.reopenedAt ? null : parseEventSeq(options.lastEventId);
      // This subscriber's view of a packed log, unpacked once (a packed log is finished: it no longer changes).
      let unpacked: BridgeEvent[] | null = null;
      const events = () => (log.packed ? (unpacked ??= eventsOf(log)) : log.events);
      const latest = log.offset + events().length - 1;
      // A malformed id, or one past anything this run published (another run's id), replays all retained events.
      let cursor = requested === null || requested > latest ? log.offset : requested + 1;
      const signal = options.signal;
      while (!signal?.aborted) {
        if (cursor < log.offset) {
          yield {
            kind: "gap",
            data: {
              code: "stream_replay_gap",
              run_id: runId,
              requested_event_id: options.lastEventId ?? null,
              earliest_available_event_id: events()[0]?.id ?? null,
              latest_available_event_id: events().at(-1)?.id ?? null,
              recovery: "reload_durable_state",
            },
          };
          return;
        }
        const index = cursor - log.offset;
        const retained = events();
        if (index < retained.length) {
          const event = retained[index];
          cursor++;
          yield { kind: "event", event };
          continue;
        }
        if (log.ended) {
          yield { kind: "end" };
          return;
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            signal?.removeEventListener("abort", done);
            resolve();
          };
          (log.waiters ??= new Set()).add(done);
          signal?.addEventListener("abort", done, { once: true });
        });
      }
    } finally {
      log.readers--;
      if (!log.readers && log.cleanupRequested && this.runs.get(runId) === log) this.queuePack(runId, log);
    }
  }
}
