// A Discord Gateway client (https://discord.com/developers/docs/events/gateway) on `ws`: HELLO, IDENTIFY with
// intents, heartbeats with zombie detection (no ACK since the last beat: reconnect), dispatches in order with their
// sequence number, RECONNECT / INVALID_SESSION, and RESUME (at `resume_gateway_url`, with the last sequence) after a
// dropped connection, so the events sent meanwhile are replayed. discord.js is not used: its gateway URL comes from
// `GET /gateway/bot` on its own REST root, and the bot needs only this loop.
import WebSocket from "ws";
import type { Logger } from "pino";
import { PlatformError } from "./types.js";

/** GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT (upstream's intents: default + messages + content). */
export const DISCORD_INTENTS = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);
/** Close codes after which reconnecting cannot help (bad token, bad shard, disallowed intents ...). */
const FATAL_CLOSE = new Set([4004, 4010, 4011, 4012, 4013, 4014]);
/** Close codes after which the session cannot be resumed (a new IDENTIFY follows). */
const NEW_SESSION_CLOSE = new Set([4007, 4009]);
/** Our own close code when we reconnect on purpose: anything but 1000/1001 keeps the session resumable. */
const RECONNECT_CLOSE = 4900;

/** Discord closed the gateway with a code reconnecting cannot fix (4004: the token is refused). */
export class GatewayClosedError extends PlatformError {}

/** What the gateway client needs. */
export interface GatewayOptions {
  token: string;
  /** Resolves the URL to IDENTIFY at (`gateway_url`, or `GET /gateway/bot`). */
  gatewayUrl: () => Promise<string>;
  /** Every dispatch (op 0): its event name and data. */
  onDispatch: (event: string, data: Record<string, any>) => void;
  logger: Logger;
  /** First reconnect delay in ms, doubled up to 30 s while connections keep failing (default 500). */
  reconnectDelayMs?: number;
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

/** One bot's Gateway session, kept across connections so a dropped one resumes. */
export class DiscordGateway {
  private session: { id: string; resumeUrl: string } | null = null;
  private seq: number | null = null;
  /** The URL of the connection in use (a READY without `resume_gateway_url` resumes there). */
  private url = "";
  /** Connections opened, IDENTIFYs and RESUMEs sent (diagnostics and tests). */
  readonly stats = { connections: 0, identifies: 0, resumes: 0 };

  constructor(private readonly options: GatewayOptions) {}

  /**
   * Holds the gateway until `signal` aborts: connects, and after each close resumes or identifies again.
   * @throws PlatformError (`auth` for 4004) when Discord closes with a code reconnecting cannot fix.
   */
  async run(signal: AbortSignal): Promise<void> {
    const base = this.options.reconnectDelayMs ?? 500;
    let delay = base;
    while (!signal.aborted) {
      let ready = false;
      try {
        const url = this.session?.resumeUrl ?? (await this.options.gatewayUrl());
        const code = await this.connect(url, signal, () => { ready = true; });
        if (FATAL_CLOSE.has(code)) throw new GatewayClosedError("discord", code === 4004 ? "auth" : "other", `Discord closed the gateway with code ${code}`);
        if (NEW_SESSION_CLOSE.has(code)) this.session = null;
      } catch (err) {
        if (err instanceof GatewayClosedError || (err instanceof PlatformError && err.kind === "auth")) throw err;
        this.options.logger.warn({ provider: "discord", err: (err as Error).message }, "discord gateway connection failed; retrying");
      }
      delay = ready ? base : Math.min(30_000, delay * 2);
      if (!signal.aborted) await sleep(ready ? base : delay, signal);
    }
  }

  /** One connection; resolves its close code (our abort reads as 1000). */
  private connect(url: string, signal: AbortSignal, onReady: () => void): Promise<number> {
    this.stats.connections++;
    this.url = url;
    const ws = new WebSocket(`${url.replace(/\/+$/, "")}/?v=10&encoding=json`);
    let beat: NodeJS.Timeout | undefined;
    let first: NodeJS.Timeout | undefined;
    let acked = true;
    const send = (payload: unknown) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(payload));
    const heartbeat = () => {
      // No ACK since the last beat: the connection is a zombie (Discord's rule); reconnect and resume.
      if (!acked) return ws.close(RECONNECT_CLOSE, "heartbeat not acknowledged");
      acked = false;
      send({ op: 1, d: this.seq });
    };
    const onAbort = () => ws.close(1000, "shutdown");
    signal.addEventListener("abort", onAbort, { once: true });
    ws.on("message", (raw) => {
      let p: { op: number; d: any; s?: number | null; t?: string | null };
      try {
        p = JSON.parse(raw.toString()) as typeof p;
      } catch {
        return;
      }
      // JSON that is not a payload object (`null`, a number, a list) is no Gateway frame.
      if (!p || typeof p !== "object" || Array.isArray(p)) return;
      if (typeof p.s === "number") this.seq = p.s;
      if (p.op === 10) {
        const interval = Number(p.d?.heartbeat_interval) || 41_250;
        first = setTimeout(() => { heartbeat(); beat = setInterval(heartbeat, interval); }, interval * Math.random());
        this.hello(send);
      } else if (p.op === 11) acked = true;
      else if (p.op === 1) send({ op: 1, d: this.seq });
      else if (p.op === 7) ws.close(RECONNECT_CLOSE, "reconnect requested");
      else if (p.op === 9) {
        if (!p.d) this.session = null;
        ws.close(RECONNECT_CLOSE, "invalid session");
      } else if (p.op === 0 && typeof p.t === "string") this.dispatchSafely(p.t, p.d, onReady);
    });
    return new Promise<number>((resolve) => {
      ws.on("error", (err) => this.options.logger.debug({ provider: "discord", err: err.message }, "discord gateway socket error"));
      ws.on("close", (code) => {
        clearTimeout(first);
        clearInterval(beat);
        signal.removeEventListener("abort", onAbort);
        resolve(signal.aborted ? 1000 : code);
      });
    });
  }

  /** After HELLO: RESUME the held session, or IDENTIFY a new one. */
  private hello(send: (payload: unknown) => void): void {
    if (this.session && this.seq !== null) {
      this.stats.resumes++;
      send({ op: 6, d: { token: this.options.token, session_id: this.session.id, seq: this.seq } });
      return;
    }
    this.stats.identifies++;
    send({ op: 2, d: { token: this.options.token, intents: DISCORD_INTENTS, properties: { os: process.platform, browser: "deerflow-gateway", device: "deerflow-gateway" } } });
  }

  /**
   * Hands a dispatch on; a payload that is not an object reads as `{}`. An error from the handler is logged, never
   * thrown out of the socket's message handler (where it would end the process).
   */
  private dispatchSafely(event: string, d: unknown, onReady: () => void): void {
    try {
      this.dispatch(event, d && typeof d === "object" && !Array.isArray(d) ? (d as Record<string, any>) : {}, onReady);
    } catch (err) {
      this.options.logger.warn({ provider: "discord", event, err: (err as Error).message }, "discord gateway dispatch not handled");
    }
  }

  private dispatch(event: string, data: Record<string, any>, onReady: () => void): void {
    if (event === "READY") this.session = { id: String(data.session_id), resumeUrl: String(data.resume_gateway_url || this.url) };
    if (event === "READY" || event === "RESUMED") onReady();
    this.options.onDispatch(event, data);
  }
}
