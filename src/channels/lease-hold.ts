// One long-lived platform connection per bot across every gateway process (Discord's Gateway, Slack Socket Mode,
// Feishu's long connection, DingTalk Stream, WeCom's bot socket): a process holds it only while it holds a named
// lease, renews the lease a third of the way through, and lets go the moment a renewal fails, so another process
// takes over once the holder dies or stalls (issue 48, item 4).
import { createHash } from "node:crypto";
import type { LeaseStore } from "./store.js";

/** What `holdUnderLease` needs. */
export interface LeaseHoldOptions {
  lease: LeaseStore;
  /** Lease name, e.g. `leaseNameFor("discord-gateway", token)`. */
  name: string;
  /** This process's holder id. */
  holderId: string;
  /** Lease lifetime without renewal, in ms; renewed every third of it. */
  leaseMs: number;
  /** Aborted when the adapter stops: the loop returns and the connection closes. */
  signal: AbortSignal;
}

/**
 * A lease name for one bot that never contains its secret: `<prefix>:<first 16 hex of sha256(secret)>`.
 */
export function leaseNameFor(prefix: string, secret: string): string {
  return `${prefix}:${createHash("sha256").update(secret).digest("hex").slice(0, 16)}`;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    // The listener goes when the timer fires: a standby process pauses every 2 s for as long as it runs.
    const onAbort = () => { clearTimeout(t); resolve(); };
    const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `connect(held)` whenever this process holds the lease, until `signal` aborts. `held` aborts when the adapter
 * stops or a renewal is lost; `connect` must then close its connection and return (a normal return re-enters the
 * loop, which re-takes the lease and reconnects). An error thrown by `connect` is final: the loop ends and the error
 * propagates (a refused token: reconnecting cannot help). A process without the lease retries every
 * min(leaseMs/4, 2 s).
 */
export async function holdUnderLease(opts: LeaseHoldOptions, connect: (held: AbortSignal) => Promise<void>): Promise<void> {
  const { lease, name, holderId, leaseMs, signal } = opts;
  while (!signal.aborted) {
    if (!(await lease.acquireLease(name, holderId, leaseMs).catch(() => false))) {
      await pause(Math.min(leaseMs / 4, 2000), signal);
      continue;
    }
    const held = new AbortController();
    const onStop = () => held.abort();
    signal.addEventListener("abort", onStop, { once: true });
    const renew = setInterval(() => {
      void lease.acquireLease(name, holderId, leaseMs).catch(() => false).then((ok) => ok || held.abort());
    }, leaseMs / 3);
    try {
      await connect(held.signal);
    } finally {
      clearInterval(renew);
      signal.removeEventListener("abort", onStop);
    }
  }
}

/**
 * An adapter's long-lived connection held under a lease: `start()` runs {@link holdUnderLease} in the background,
 * `stop()` ends it and gives the lease up. An error from `connect` is final (refused credentials): `receiving`
 * turns false and `onFatal` is called once (log it, mark the connections broken).
 */
export class LeaseHeldConnection {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private closedForGood = false;

  constructor(
    private readonly options: Omit<LeaseHoldOptions, "signal">,
    private readonly connect: (held: AbortSignal) => Promise<void>,
    private readonly onFatal: (err: Error) => Promise<void> | void,
  ) {}

  /** False once `connect` failed for good: the platform no longer delivers to this adapter. */
  get receiving(): boolean {
    return !this.closedForGood;
  }

  /** Starts holding the connection (returns at once). */
  start(): void {
    this.loop = (async () => {
      try {
        await holdUnderLease({ ...this.options, signal: this.stopping.signal }, this.connect);
      } catch (err) {
        this.closedForGood = true;
        await this.onFatal(err as Error);
      }
    })();
  }

  /** Closes the connection, waits for the loop to end and releases the lease. Never throws. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop?.catch(() => undefined);
    await this.options.lease.releaseLease(this.options.name, this.options.holderId).catch(() => undefined);
  }
}
