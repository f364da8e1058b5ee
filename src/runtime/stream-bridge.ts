// Port of DeerFlow runtime/stream_bridge (memory implementation): decouples the run worker from SSE consumers.
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
   * A finished run's events, deflated, one byte per char (see {@link MemoryStreamBridge.cleanup}); read with
   * {@link eventsOf}. A string rather than a Buffer: no Buffer and ArrayBuffer objects (~180 bytes) per retained run.
   */
  packed: { data: string; count: number } | undefined;
  /** Sequence number of `events[0]`. */
  offset: number;
  ended: boolean;
  /** Subscribers waiting for the next event; created by the first one that waits. */
  waiters: Set<() => void> | undefined;
  /** Subscribers iterating the log now: a finished log is packed only once none is left (they read it as it is). */
  readers: number;
  /** Whether {@link MemoryStreamBridge.cleanup} was asked for (the log is packed when its last reader leaves). */
  cleanupRequested: boolean;
}

/** The `events` of every packed log: frozen, so nothing appends to a packed log by mistake. */
const PACKED_EVENTS: BridgeEvent[] = Object.freeze([]) as unknown as BridgeEvent[];

/**
 * Deflate settings of packed logs: level 1 packs a typical run's 6 KB of frames to 1.2 KB (levels 3 and 6 gain
 * under 7%); an 8 KiB window and memLevel 6 give the same size for a quarter less CPU than the defaults (~26 µs),
 * most of a small input's cost being the stream's set-up.
 */
const PACK_OPTIONS = { level: 1, windowBits: 13, memLevel: 6 } as const;

/** A log's retained events, unpacking a packed log (the caller keeps the array; the log stays packed). */
export function eventsOf(log: RunLog): BridgeEvent[] {
  return log.packed ? (JSON.parse(inflateRawSync(Buffer.from(log.packed.data, "latin1"), { windowBits: PACK_OPTIONS.windowBits }).toString("utf8")) as BridgeEvent[]) : log.events;
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

/**
 * In-memory {@link StreamBridge}: a per-run log bounded to `queueMaxSize` events (oldest evicted, watermark
 * advanced; `end` is a flag and never evicts data). A subscriber whose cursor falls below the watermark gets one
 * `gap` and stops; the run is not affected.
 */
export class MemoryStreamBridge implements StreamBridge {
  protected readonly runs = new Map<string, RunLog>();
  /** Finished runs' logs waiting to be dropped (see {@link cleanup}). */
  private readonly expiry = new ExpiryQueue<string>((runId) => this.expire(runId));

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
      log = { events: [], packed: undefined, offset: 0, ended: false, waiters: undefined, readers: 0, cleanupRequested: false };
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
   * Schedules the drop of the run's log in `delayMs` (ms). A finished run's events are packed at once (deflate,
   * ~1.2 KB for a typical run's 6 KB of frames) for the rest of their retention: under steady load a minute of
   * finished runs is most of what the process holds, and the replay of a finished run is rare (a reload, a reconnect).
   */
  cleanup(runId: string, delayMs: number): void {
    const log = this.runs.get(runId);
    if (!log) return;
    log.cleanupRequested = true;
    if (!log.readers) this.pack(log);
    this.expiry.schedule(runId, delayMs);
  }

  /** Drops a finished run's log once its retention (see {@link cleanup}) has passed. */
  protected expire(runId: string): void {
    this.runs.delete(runId);
  }

  /** Packs a finished log's events (see {@link cleanup}); a no-op for a running, empty or packed log. */
  private pack(log: RunLog): void {
    if (!log.ended || log.packed || !log.events.length) return;
    // A string copy of zlib's output (a view of a 16 KiB chunk, which a Buffer slice would keep alive).
    const data = deflateRawSync(JSON.stringify(log.events), PACK_OPTIONS).toString("latin1");
    log.packed = { data, count: log.events.length };
    log.events = PACKED_EVENTS;
    log.waiters = undefined;
  }

  close(): void {
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
      const requested = parseEventSeq(options.lastEventId);
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
      if (!log.readers && log.cleanupRequested && this.runs.get(runId) === log) this.pack(log);
    }
  }
}
