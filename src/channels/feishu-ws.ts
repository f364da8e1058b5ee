// Feishu / Lark long connection, upstream's default mode (feishu.py runs lark-oapi's `ws.Client`): the Open Platform
// SDK's WSClient asks `POST {domain}/callback/ws/endpoint` for a socket URL with the app's credentials, holds the
// socket (protobuf `pbbp2` frames, ping/pong, one ack frame per event, reconnects after a drop) and hands each event
// to an EventDispatcher. Here one connection runs only while this process holds the bot's lease (feishu.ts,
// lease-hold.ts), and each `im.message.receive_v1` is read exactly as a webhook delivery is (feishu-events.ts).
import { createRequire } from "node:module";
import type { Logger } from "pino";
import { toInbound, type FeishuEnvelope } from "./feishu-events.js";
import { PlatformError, type InboundMessage } from "./types.js";

/** The SDK's logger interface: each level gets the message parts as arguments. */
type LarkLogger = Record<"error" | "warn" | "info" | "debug" | "trace", (...parts: unknown[]) => void>;

/** The part of lark-oapi's WSClient used here (`@larksuiteoapi/node-sdk` 1.74.0, lib/index.js `class WSClient`). */
interface LarkWsClient {
  start(params: { eventDispatcher: LarkDispatcher }): Promise<void>;
  close(params?: { force?: boolean }): void;
}

/** lark-oapi's EventDispatcher: `register({event_type: handler})`; a handler gets the header and event fields flat. */
interface LarkDispatcher {
  register(handles: Record<string, (data: Record<string, any>) => Promise<unknown>>): LarkDispatcher;
}

/**
 * The SDK entry points used here. Loaded with `require` and typed locally because the package's own declarations
 * are one 17 MB file that would add about 15 s to every typecheck of the project; loaded lazily because its bundle
 * takes about 0.7 s to load, which only a gateway in websocket mode should pay.
 */
interface LarkSdk {
  WSClient: new (params: {
    appId: string;
    appSecret: string;
    domain: string;
    loggerLevel: number;
    logger: LarkLogger;
    autoReconnect: boolean;
    onReady?: () => void;
    onError?: (err: Error) => void;
  }) => LarkWsClient;
  EventDispatcher: new (params: { encryptKey?: string; verificationToken?: string; loggerLevel: number; logger: LarkLogger }) => LarkDispatcher;
  LoggerLevel: { warn: number };
}

let sdk: LarkSdk | null = null;
function larkSdk(): LarkSdk {
  sdk ??= createRequire(import.meta.url)("@larksuiteoapi/node-sdk") as LarkSdk;
  return sdk;
}

/** `callback/ws/endpoint` codes that refuse the app itself (lark-oapi's ErrorCode `forbidden` and `auth_failed`). */
const REFUSED_CODES = new Set([403, 514]);
/** How long to wait before a fresh client after the SDK gave up for another reason (system busy, retries spent). */
const RETRY_AFTER_MS = 5000;

/** What one long connection needs. */
export interface FeishuLongConnectionOptions {
  appId: string;
  appSecret: string;
  /** The Open Platform root (`https://open.feishu.cn`, `https://open.larksuite.com`, or a fake's URL). */
  domain: string;
  /** The app's Encrypt Key, when events are encrypted (the dispatcher opens them); empty: plaintext. */
  encryptKey: string;
  logger: Logger;
  /** Receives each user message; resolves once queued (the SDK acks the event after it, 500 when it throws). */
  onMessage: (message: InboundMessage) => Promise<void>;
}

/** The SDK's log lines at warn and above go to the gateway's logger; the debug ones (event bodies, URLs with tickets) never do. */
function larkLogger(logger: Logger): LarkLogger {
  const line = (parts: unknown[]) => parts.map((p) => (p instanceof Error ? p.message : typeof p === "string" ? p : JSON.stringify(p))).join(" ");
  return {
    error: (...p) => logger.error({ provider: "feishu" }, `lark-oapi: ${line(p)}`),
    warn: (...p) => logger.warn({ provider: "feishu" }, `lark-oapi: ${line(p)}`),
    info: () => undefined, debug: () => undefined, trace: () => undefined,
  };
}

/** The schema 2.0 envelope back from the dispatcher's flat handler argument (header and event fields merged). */
function envelopeOf(data: Record<string, any>): FeishuEnvelope {
  return {
    schema: data.schema,
    header: { event_id: data.event_id, event_type: data.event_type, tenant_key: data.tenant_key, token: data.token },
    event: { sender: data.sender, message: data.message },
  };
}

/** Waits `ms`, or less when `signal` aborts first. */
export function pauseUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/**
 * Holds one long connection until `held` aborts (then closes it and resolves). The SDK reconnects dropped sockets by
 * itself, with the intervals the platform gives. When the SDK gives up: a refusal of the app's credentials (codes
 * 403 / 514) throws a PlatformError of kind `auth`, final; anything else resolves after a pause, so the lease loop
 * starts a fresh client.
 * @throws PlatformError (`auth`) when the platform refuses the app.
 */
export async function holdFeishuLongConnection(opts: FeishuLongConnectionOptions, held: AbortSignal): Promise<void> {
  if (held.aborted) return;
  const lark = larkSdk();
  const logger = larkLogger(opts.logger);
  const dispatcher = new lark.EventDispatcher({ encryptKey: opts.encryptKey || undefined, loggerLevel: lark.LoggerLevel.warn, logger }).register({
    "im.message.receive_v1": async (data) => {
      const message = toInbound(envelopeOf(data), Date.now());
      if (message) await opts.onMessage(message);
    },
    // Read receipts arrive on the same socket (upstream ignores them too); registered so the SDK does not warn.
    "im.message.message_read_v1": async () => undefined,
  });
  let failed: Error | null = null;
  const gaveUp = new AbortController();
  const client = new lark.WSClient({
    appId: opts.appId, appSecret: opts.appSecret, domain: opts.domain, loggerLevel: lark.LoggerLevel.warn, logger, autoReconnect: true,
    onError: (err) => { failed = err; gaveUp.abort(); },
  });
  const stop = () => gaveUp.abort();
  held.addEventListener("abort", stop, { once: true });
  try {
    await client.start({ eventDispatcher: dispatcher });
    await new Promise<void>((resolve) => (gaveUp.signal.aborted ? resolve() : gaveUp.signal.addEventListener("abort", () => resolve(), { once: true })));
  } finally {
    held.removeEventListener("abort", stop);
    client.close({ force: true });
  }
  if (!failed || held.aborted) return;
  const reason = (failed as Error).message;
  const code = Number(/code=(\d+)/.exec(reason)?.[1]);
  if (REFUSED_CODES.has(code)) throw new PlatformError("feishu", "auth", `Feishu refused the app's long connection: ${reason}`);
  opts.logger.warn({ provider: "feishu", err: reason }, "feishu long connection gave up; starting a new one");
  await pauseUnlessAborted(RETRY_AFTER_MS, held);
}
