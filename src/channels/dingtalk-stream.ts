// A DingTalk Stream mode client (https://open.dingtalk.com/document/direction/stream-mode-protocol-access-description)
// on `ws` and fetch: `POST <api_base>/v1.0/gateway/connections/open` with the app's credentials and subscriptions
// gives an endpoint and a one-time ticket; the websocket at `<endpoint>?ticket=<ticket>` carries JSON frames: SYSTEM
// `ping` (echoed back), SYSTEM `disconnect` (the server is about to close: open a new connection), and CALLBACK
// frames (chatbot messages on `/v1.0/im/bot/messages/get`), each acknowledged by its `messageId` so DingTalk does
// not push it again. The npm `dingtalk-stream` SDK is not used: its open-connection URL is a hard-coded constant.
import WebSocket from "ws";
import type { Logger } from "pino";
import { callPlatform, type PlatformAnswer, type Verdict } from "./platform-http.js";
import { PlatformError } from "./types.js";

/** The chatbot message topic (upstream `ChatbotMessage.TOPIC`). */
export const DINGTALK_BOT_TOPIC = "/v1.0/im/bot/messages/get";

/** One downstream frame of the Stream protocol. */
export interface StreamFrame {
  specVersion?: string;
  type: "SYSTEM" | "EVENT" | "CALLBACK" | string;
  headers: { messageId?: string; topic?: string; contentType?: string; [k: string]: unknown };
  /** The payload, a JSON string. */
  data: string;
}

/** What the Stream client needs. */
export interface StreamOptions {
  apiBase: string;
  clientId: string;
  clientSecret: string;
  logger: Logger;
  /** A CALLBACK frame's parsed `data` on `topic`; the frame is acknowledged after this returns. */
  onCallback: (topic: string, data: Record<string, unknown>) => void;
  counter?: { calls: number };
  /** First reconnect delay in ms, doubled up to 30 s while connections keep failing (default 500). */
  reconnectDelayMs?: number;
  /** Client ping interval in ms; a connection that misses one pong is dropped and reopened (default 20 000). */
  pingMs?: number;
}

/** Reads the open-connection answer: 2xx ok; 429 / 5xx retried; 400/401/403 with a credential error: `auth`. */
export function judgeOpen(answer: PlatformAnswer): Verdict {
  if (answer.status >= 200 && answer.status < 300) return { kind: "ok" };
  if (answer.status === 429 || answer.status >= 500) return { kind: "retry" };
  const body = answer.body ?? {};
  const detail = `${String(body.code ?? "")} ${String(body.message ?? "")}`.trim() || `HTTP ${answer.status}`;
  const auth = answer.status === 401 || answer.status === 403 || /auth|secret|appkey|clientid|credential/i.test(detail);
  return { kind: "fail", error: new PlatformError("dingtalk", auth ? "auth" : "other", `DingTalk refused the stream connection: ${detail}`) };
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const onAbort = () => { clearTimeout(t); resolve(); };
  const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
  signal.addEventListener("abort", onAbort, { once: true });
});

/** One app's Stream connection, reopened (new endpoint and ticket) after every close. */
export class DingTalkStream {
  /** Connections opened and frames acknowledged (diagnostics and tests). */
  readonly stats = { connections: 0, acks: 0 };

  constructor(private readonly options: StreamOptions) {}

  /**
   * Holds the stream until `signal` aborts, reconnecting after each close or failure.
   * @throws PlatformError (`auth`) when DingTalk refuses the credentials: reconnecting cannot help.
   */
  async run(signal: AbortSignal): Promise<void> {
    const base = this.options.reconnectDelayMs ?? 500;
    let delay = base;
    while (!signal.aborted) {
      let opened = false;
      try {
        const url = await this.open(signal);
        opened = await this.connect(url, signal);
      } catch (err) {
        if (err instanceof PlatformError && err.kind === "auth") throw err;
        if (signal.aborted) return;
        this.options.logger.warn({ provider: "dingtalk", err: (err as Error).message }, "dingtalk stream connection failed; retrying");
      }
      delay = opened ? base : Math.min(30_000, delay * 2);
      await sleep(delay, signal);
    }
  }

  /** Asks for an endpoint and ticket; resolves the websocket URL. */
  private async open(signal: AbortSignal): Promise<string> {
    const o = this.options;
    const body = { clientId: o.clientId, clientSecret: o.clientSecret, ua: "deerflow-gateway", subscriptions: [{ type: "CALLBACK", topic: DINGTALK_BOT_TOPIC }] };
    const answer = await callPlatform("dingtalk", `${o.apiBase.replace(/\/+$/, "")}/v1.0/gateway/connections/open`, body, judgeOpen, { headers: { accept: "application/json" }, counter: o.counter, signal });
    const { endpoint, ticket } = (answer.body ?? {}) as { endpoint?: unknown; ticket?: unknown };
    if (typeof endpoint !== "string" || !endpoint || typeof ticket !== "string" || !ticket) throw new PlatformError("dingtalk", "other", "DingTalk's open-connection answer has no endpoint or ticket");
    return `${endpoint}${endpoint.includes("?") ? "&" : "?"}ticket=${encodeURIComponent(ticket)}`;
  }

  /** One websocket; resolves when it closes: true when it had opened (the reconnect delay starts over). */
  private connect(url: string, signal: AbortSignal): Promise<boolean> {
    this.stats.connections++;
    const ws = new WebSocket(url);
    let opened = false;
    let alive = true;
    let pinger: NodeJS.Timeout | undefined;
    const onAbort = () => ws.close(1000, "shutdown");
    signal.addEventListener("abort", onAbort, { once: true });
    ws.on("open", () => {
      opened = true;
      // A half-open TCP connection delivers nothing and never closes: one missed pong reopens it.
      pinger = setInterval(() => {
        if (!alive) return ws.terminate();
        alive = false;
        ws.ping();
      }, this.options.pingMs ?? 20_000);
    });
    ws.on("pong", () => { alive = true; });
    ws.on("message", (raw) => this.frame(ws, raw.toString()));
    return new Promise<boolean>((resolve) => {
      ws.on("error", (err) => this.options.logger.debug({ provider: "dingtalk", err: err.message }, "dingtalk stream socket error"));
      ws.on("close", () => {
        clearInterval(pinger);
        signal.removeEventListener("abort", onAbort);
        resolve(opened);
      });
    });
  }

  private frame(ws: WebSocket, raw: string): void {
    let f: StreamFrame;
    try {
      f = JSON.parse(raw) as StreamFrame;
    } catch {
      return;
    }
    // JSON that is not a frame object (`null`, a number) is ignored: it names no messageId to acknowledge.
    if (!f || typeof f !== "object") return;
    const reply = (data: string) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ code: 200, headers: { contentType: "application/json", messageId: f.headers?.messageId }, message: "OK", data }));
    if (f.type === "SYSTEM") {
      if (f.headers?.topic === "ping") reply(f.data);
      // The server closes the connection shortly after; a new one is opened then (with a new ticket).
      else if (f.headers?.topic === "disconnect") ws.close(1000, "server disconnect");
      return;
    }
    if (f.type !== "CALLBACK" && f.type !== "EVENT") return;
    let data: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(f.data);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) data = parsed as Record<string, unknown>;
    } catch {
      // An unreadable payload is still acknowledged: a redelivery would be as unreadable.
    }
    try {
      if (f.type === "CALLBACK") this.options.onCallback(String(f.headers?.topic ?? ""), data);
    } catch (err) {
      // Never thrown out of the socket's message handler (it would end the process); the frame is still acked.
      this.options.logger.warn({ provider: "dingtalk", err: (err as Error).message }, "dingtalk callback not handled");
    }
    this.stats.acks++;
    reply(JSON.stringify(f.type === "CALLBACK" ? { response: "OK" } : { status: "SUCCESS", message: "OK" }));
  }
}
