// Slack Socket Mode (https://docs.slack.dev/apis/events-api/using-socket-mode), upstream's default Slack mode: the
// app token opens a websocket (`apps.connections.open` under the configured Web API root gives its URL), Slack
// sends `hello`, then `events_api` envelopes that must be acknowledged by `envelope_id` within 3 s, and
// `disconnect` when it wants the client on a fresh URL. The protocol is @slack/socket-mode's (its WebClient takes
// the API root as `slackApiUrl`, so tests reach a local fake); reconnection is ours, so a refused token ends the
// loop with an error instead of a rejection nobody catches, and the loop runs under the adapter's lease.
import { LogLevel, SocketModeClient, type Logger as SlackLogger } from "@slack/socket-mode";
import type { Logger } from "pino";
import { PlatformError } from "./types.js";

/** `apps.connections.open` errors after which reconnecting cannot help (the SDK's unrecoverable start errors). */
const REFUSED = new Set(["not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired", "user_removed_from_team", "team_disabled", "not_allowed_token_type", "missing_scope"]);

/** What {@link SlackSocketConnection} needs. */
export interface SlackSocketOptions {
  /** The app-level token (`xapp-...`). */
  appToken: string;
  /** The Web API root (`channels.slack.api_base`), where `apps.connections.open` is called. */
  apiBase: string;
  logger: Logger;
  /**
   * Called with each `events_api` envelope's payload (the Events API `event_callback` body), after it was acked.
   * Must not throw.
   */
  onEvent: (payload: Record<string, any>) => void;
  /** First delay before reconnecting after a failed connection, in ms, doubled up to 30 s (default 500). */
  reconnectDelayMs?: number;
  /** Counts `apps.connections.open` calls with the adapter's platform API calls. */
  counter?: { calls: number };
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const onAbort = () => { clearTimeout(t); resolve(); };
  const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
  signal.addEventListener("abort", onAbort, { once: true });
});

/** The SDK's log lines go to the gateway's logger at debug: the loop logs what an operator needs itself. */
function sdkLogger(logger: Logger): SlackLogger {
  const line = (...msg: unknown[]) => logger.debug({ provider: "slack" }, msg.map(String).join(" "));
  return { debug: line, info: line, warn: line, error: line, setLevel: () => undefined, getLevel: () => LogLevel.INFO, setName: () => undefined };
}

/** The Slack error code of a failed `apps.connections.open` (`invalid_auth`, ...), when Slack answered with one. */
function slackErrorCode(err: unknown): string | null {
  const code = (err as { data?: { error?: unknown } } | null)?.data?.error;
  return typeof code === "string" ? code : null;
}

/** One app's Socket Mode session, reconnected across `disconnect` frames and dropped sockets. */
export class SlackSocketConnection {
  /** Sessions opened (a `hello` received), envelopes received and acks sent: diagnostics and tests. */
  readonly stats = { connections: 0, envelopes: 0, acks: 0 };

  constructor(private readonly options: SlackSocketOptions) {}

  /**
   * Holds a Socket Mode session until `signal` aborts: opens one, waits for it to end (a `disconnect` frame, a
   * dropped socket, a missed ping), opens the next with a fresh URL. A failed open backs off from 500 ms to 30 s.
   * @throws PlatformError `auth` when Slack refuses the app token: reconnecting cannot help.
   */
  async run(signal: AbortSignal): Promise<void> {
    const base = this.options.reconnectDelayMs ?? 500;
    let delay = base;
    while (!signal.aborted) {
      let opened = false;
      try {
        opened = await this.session(signal);
      } catch (err) {
        const code = slackErrorCode(err);
        if (code && REFUSED.has(code)) throw new PlatformError("slack", "auth", `Slack refused the app token (apps.connections.open: ${code})`);
        // The SDK rejects with nothing when the socket closes before `hello`.
        this.options.logger.warn({ provider: "slack", err: err instanceof Error ? err.message : "closed before hello" }, "slack socket mode connection failed; retrying");
      }
      // A session that ended after its hello (a refresh, Slack's routine disconnect) reconnects at once.
      delay = opened ? base : Math.min(30_000, delay * 2);
      if (!opened && !signal.aborted) await sleep(delay, signal);
    }
  }

  /** One session: resolves true once it ended after a `hello`; throws when it could not be opened. */
  private async session(signal: AbortSignal): Promise<boolean> {
    const counter = this.options.counter;
    const client = new SocketModeClient({
      appToken: this.options.appToken, autoReconnectEnabled: false, logger: sdkLogger(this.options.logger),
      // Bounded retries of apps.connections.open (5xx, network, 429 after Retry-After); the loop backs off beyond.
      clientOptions: {
        slackApiUrl: `${this.options.apiBase.replace(/\/+$/, "")}/`, retryConfig: { retries: 3, factor: 2, minTimeout: 250, maxTimeout: 30_000 }, timeout: 30_000,
        fetch: (url, init) => { if (counter) counter.calls++; return fetch(url, init as RequestInit); },
      },
    });
    const ended = new Promise<void>((resolve) => client.on("disconnected", () => resolve()));
    client.on("slack_event", (e: { ack: () => Promise<void>; type: string; body: Record<string, any> }) => this.envelope(e));
    const stop = () => void client.disconnect();
    signal.addEventListener("abort", stop, { once: true });
    try {
      await client.start();
      this.stats.connections++;
      // An abort while the URL was being fetched found no socket to close; close the one start() opened.
      if (signal.aborted) await client.disconnect();
      await ended;
      return true;
    } finally {
      signal.removeEventListener("abort", stop);
      await client.disconnect().catch(() => undefined);
      client.removeAllListeners();
    }
  }

  /** Acks an envelope first (Slack's 3 s rule, before any work), then hands an `events_api` payload on. */
  private envelope(e: { ack: () => Promise<void>; type: string; body: Record<string, any> }): void {
    this.stats.envelopes++;
    e.ack().then(() => { this.stats.acks++; }, (err: Error) => this.options.logger.warn({ provider: "slack", err: err.message }, "slack envelope not acknowledged"));
    if (e.type !== "events_api" || !e.body || typeof e.body !== "object") return;
    try {
      this.options.onEvent(e.body);
    } catch (err) {
      // Thrown here it would reject the SDK's message handler, unhandled: the process would end.
      this.options.logger.warn({ provider: "slack", err: (err as Error).message }, "slack event not handled");
    }
  }
}
