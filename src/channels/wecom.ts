// WeCom (企业微信) intelligent bot (upstream wecom.py): one long connection per bot through the official
// `@wecom/aibot-node-sdk` (subscribe with bot_id + secret, heartbeats, reconnects), held by one gateway process at a
// time under a lease (lease-hold.ts). Messages arrive as `aibot_msg_callback` frames; the answer streams back as
// WeCom's native `stream` reply (`aibot_respond_msg` with the message's req_id, the whole text so far in each frame,
// `finish: true` on the last), and a reply with no message to answer goes out as `aibot_send_msg` markdown.
import { randomUUID } from "node:crypto";
import { WSAuthFailureError, WSClient, generateReqId, type WsFrame } from "@wecom/aibot-node-sdk";
import type { Logger } from "pino";
import type { WecomConfig } from "./config.js";
import { LeaseHeldConnection, leaseNameFor } from "./lease-hold.js";
import { downloadWecomFile, wecomFiles } from "./wecom-files.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./platform-http.js";
import type { LeaseStore } from "./store.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type ConnectionStatusSink, type InboundFile, type InboundMessage, type InboundSink, type OutboundFile, type ReplyOptions, type ReplyTarget } from "./types.js";

/**
 * The longest text one stream frame carries, in characters: WeCom takes 20 480 bytes of UTF-8, and 5 000 code
 * points are at most 20 000 bytes whatever the script.
 */
export const WECOM_MAX_CHARS = 5000;
/** Upstream's limits for files posted into WeCom: images up to 2 MiB (larger ones go as files), files up to 20 MiB. */
const WECOM_IMAGE_MAX_BYTES = 2 * 1024 * 1024;
export const WECOM_FILE_MAX_BYTES = 20 * 1024 * 1024;
/** Stream frames go out at most every 500 ms (each waits for WeCom's ack before the next, as the SDK queues them). */
export const WECOM_STREAM_INTERVAL_MS = 500;
/** WeCom's "API frequency out of limit" codes: wait (at least a second) and send again. */
const RATE_LIMIT_CODES = new Set([45009, 45033]);
/** "System busy": try again after the backoff. */
const BUSY_CODES = new Set([-1]);
/** The reply's req_id is no longer valid or its stream expired: the text goes out as a new message instead. */
const EXPIRED_CODES = new Set([846605, 846608]);

/** What the WeCom adapter needs besides its config section. */
export interface WecomDeps {
  logger: Logger;
  lease: LeaseStore;
  /** This process's lease-holder id. */
  holderId: string;
  retry?: RetryPolicy;
  counter?: { calls: number };
  /** Lease lifetime without renewal, in ms (default 30 000; renewed every third of it). */
  leaseMs?: number;
  /** First reconnect delay in ms, doubled per failed try up to 30 s (the SDK's `reconnectInterval`, default 1000). */
  reconnectDelayMs?: number;
  /** Refused subscriptions tried again before the secret counts as refused (default 2: three tries, ~3 s). */
  authRetries?: number;
  /** Heartbeat interval in ms (default 30 000, the SDK's). */
  heartbeatMs?: number;
  /** The provider's connection status sink (the service wires it to the channel store). */
  setStatus?: ConnectionStatusSink;
}

/** The parts of an `aibot_msg_callback` body read here. */
interface WecomBody {
  msgid?: string;
  aibotid?: string;
  chatid?: string;
  chattype?: string;
  from?: { userid?: string };
  msgtype?: string;
  text?: { content?: string };
  voice?: { content?: string };
  mixed?: { msg_item?: { msgtype?: string; text?: { content?: string }; image?: { url?: string; aeskey?: string } }[] };
  image?: { url?: string; aeskey?: string };
  file?: { url?: string; aeskey?: string };
  quote?: { text?: { content?: string } };
}

/** A streamed reply still open: the message (req_id) it answers and the chat it is in. */
interface OpenStream {
  reqId: string | null;
  chatId: string;
  /** For a reply without a req_id: the text so far, sent as one markdown message when it ends. */
  buffered: string;
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

/** The errcode of an SDK rejection (an ack frame), or undefined for a transport error (timeout, not connected). */
function errcodeOf(err: unknown): { code: number; message: string } | undefined {
  if (err && typeof err === "object" && "errcode" in err && typeof (err as { errcode: unknown }).errcode === "number") {
    return { code: (err as { errcode: number }).errcode, message: String((err as { errmsg?: unknown }).errmsg ?? "") };
  }
  return undefined;
}

/** The text of a callback body (upstream `_on_ws_text` / `_on_ws_mixed`, plus a voice message's transcript). */
export function wecomText(body: WecomBody): string {
  let text = "";
  if (body.msgtype === "text") text = body.text?.content ?? "";
  else if (body.msgtype === "voice") text = body.voice?.content ?? "";
  else if (body.msgtype === "mixed") text = (body.mixed?.msg_item ?? []).filter((i) => i?.msgtype === "text").map((i) => (i.text?.content ?? "").trim()).filter(Boolean).join("\n\n");
  text = text.trim();
  const quote = (body.quote?.text?.content ?? "").trim();
  return quote ? `${text}\nQuote message: ${quote}` : text;
}

/** The WeCom adapter (upstream wecom.py on the official Node SDK). */
export class WecomAdapter implements ChannelAdapter {
  readonly provider = "wecom";
  readonly capabilities: AdapterCapabilities;
  readonly maxUploadBytes = WECOM_FILE_MAX_BYTES;
  private sink: InboundSink | null = null;
  private client: WSClient | null = null;
  private readonly streams = new Map<string, OpenStream>();
  private readonly held: LeaseHeldConnection;
  /** Long connections opened and `aibot_subscribe` answers seen (diagnostics and tests). */
  readonly stats = { connections: 0, authenticated: 0 };

  constructor(private readonly config: WecomConfig, private readonly deps: WecomDeps) {
    this.capabilities = { editMessages: true, maxMessageChars: WECOM_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? WECOM_STREAM_INTERVAL_MS, finalizeEdits: true };
    // One long connection per bot, whatever process (WeCom keeps one per bot and kicks the older one).
    const lease = { lease: deps.lease, name: leaseNameFor("wecom-ws", `${config.bot_id}:${config.bot_secret}`), holderId: deps.holderId, leaseMs: deps.leaseMs ?? 30_000 };
    this.held = new LeaseHeldConnection(lease, (held) => this.connection(held), async (err) => {
      this.deps.logger.error({ provider: "wecom", err: err.message }, "wecom refused bot_id / bot_secret; the channel stops receiving (check channels.wecom)");
      await this.deps.setStatus?.("broken");
    });
  }

  /** False once WeCom refused the bot's credentials: the channel no longer receives. */
  get receiving(): boolean {
    return this.held.receiving;
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.held.start();
  }

  async stop(): Promise<void> {
    await this.held.stop();
    this.sink = null;
  }

  /**
   * One SDK client until `held` aborts (returns) or WeCom refuses the secret (throws PlatformError `auth`). The SDK
   * reconnects a dropped connection itself; a `disconnected_event` (another connection of this bot took over)
   * returns after a pause so the lease loop decides who connects.
   */
  private connection(held: AbortSignal): Promise<void> {
    const sdkLog = (level: string) => (message: string, ...args: unknown[]) => this.deps.logger.debug({ provider: "wecom", sdk: level, args: args.map(String) }, message);
    const client = new WSClient({
      botId: this.config.bot_id, secret: this.config.bot_secret, wsUrl: this.config.ws_url,
      reconnectInterval: this.deps.reconnectDelayMs ?? 1000, maxReconnectAttempts: -1, maxAuthFailureAttempts: this.deps.authRetries ?? 2,
      heartbeatInterval: this.deps.heartbeatMs ?? 30_000,
      logger: { debug: sdkLog("debug"), info: sdkLog("info"), warn: sdkLog("warn"), error: sdkLog("error") },
    });
    this.client = client;
    client.on("connected", () => this.stats.connections++);
    client.on("authenticated", () => {
      this.stats.authenticated++;
      void this.deps.setStatus?.("connected");
    });
    client.on("message", (frame: WsFrame) => this.onFrame(frame));
    return new Promise<void>((resolve, reject) => {
      const finish = (err?: Error) => {
        held.removeEventListener("abort", onHeld);
        client.removeAllListeners();
        client.disconnect();
        if (this.client === client) this.client = null;
        if (err) reject(err);
        else resolve();
      };
      const onHeld = () => finish();
      held.addEventListener("abort", onHeld, { once: true });
      client.on("error", (err: Error) => {
        if (err instanceof WSAuthFailureError) finish(new PlatformError("wecom", "auth", "WeCom refused the bot's subscription (aibot_subscribe)"));
      });
      client.on("event.disconnected_event", () => {
        this.deps.logger.warn({ provider: "wecom" }, "wecom closed this long connection: another connection of the bot took over");
        void sleep(5000, held).then(() => finish());
      });
      client.connect();
    });
  }

  private onFrame(frame: WsFrame): void {
    const message = this.toInbound(frame);
    if (message && this.sink) {
      this.sink(message).catch((err) => this.deps.logger.warn({ provider: "wecom", err: (err as Error).message }, "wecom message not queued"));
    }
  }

  private toInbound(frame: WsFrame): InboundMessage | null {
    const body = (frame.body ?? {}) as WecomBody;
    const userId = body.from?.userid;
    const reqId = frame.headers?.req_id;
    if (!body.msgid || !userId || !reqId) return null;
    const group = body.chattype === "group";
    // In a group the bot only receives messages that @mention it; the mention leads the text.
    const files = wecomFiles(body);
    let text = group ? wecomText(body).replace(/^@\S+\s*/, "") : wecomText(body);
    if (!text && !files.length) return null;
    // Upstream's prompt for a message that is only files.
    if (!text) text = body.msgtype === "image" ? "（receive image ）" : body.msgtype === "file" ? "（receive file）" : "（receive image/file）";
    return {
      provider: "wecom", eventId: body.msgid, userId, userName: null, workspaceId: body.aibotid || null,
      chatId: group && body.chatid ? body.chatid : userId, topicId: null, replyToId: reqId,
      text, isDirect: !group, mentioned: true, receivedAt: Date.now(), files,
    };
  }

  /** Downloads and decrypts a file the user sent (the URL and aeskey of its callback), at most `maxBytes`. */
  downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    return downloadWecomFile(file, maxBytes, this.config.ws_url, this.deps.counter);
  }

  /**
   * Sends one frame through the SDK with the platform's retry rules: a frequency-limit or busy errcode, an ack
   * timeout or a dropped connection waits and tries again (4 tries, 250 ms doubled, at least 1 s after a limit).
   * @throws PlatformError (`other` with the errcode when WeCom refuses the frame; `rate_limited` when tries run out).
   */
  private async call<T>(op: (client: WSClient) => Promise<T>): Promise<T> {
    const policy = this.deps.retry ?? DEFAULT_RETRY;
    let last = "no answer";
    let limited = false;
    for (let attempt = 0; attempt < policy.attempts; attempt++) {
      if (attempt > 0) await sleep(Math.min(policy.maxDelayMs, limited ? Math.max(1000, policy.baseDelayMs * 2 ** (attempt - 1)) : policy.baseDelayMs * 2 ** (attempt - 1)));
      const client = this.client;
      if (this.deps.counter) this.deps.counter.calls++;
      if (!client) {
        last = "the long connection is not open";
        continue;
      }
      try {
        return await op(client);
      } catch (err) {
        const refused = errcodeOf(err);
        if (refused && !RATE_LIMIT_CODES.has(refused.code) && !BUSY_CODES.has(refused.code)) {
          throw Object.assign(new PlatformError("wecom", "other", `WeCom refused the reply: errcode ${refused.code} ${refused.message}`.trim()), { errcode: refused.code });
        }
        limited = refused !== undefined && RATE_LIMIT_CODES.has(refused.code);
        last = refused ? `errcode ${refused.code}` : (err as Error).message;
      }
    }
    throw new PlatformError("wecom", limited ? "rate_limited" : "other", `wecom reply failed after ${policy.attempts} tries (${last})`);
  }

  /**
   * Posts a presented file (upstream `send_file`): uploaded over the long connection (`aibot_upload_media_*`, the
   * SDK's chunked upload), then a reply with its media_id to the message answered (else `aibot_send_msg`).
   */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const type = file.contentType.startsWith("image/") && file.data.length <= WECOM_IMAGE_MAX_BYTES ? "image" : "file";
    const media = await this.call((c) => c.uploadMedia(file.data, { type, filename: file.filename }));
    const reqId = target.replyToId;
    if (reqId) await this.call((c) => c.replyMedia({ headers: { req_id: reqId } }, type, media.media_id));
    else await this.call((c) => c.sendMediaMessage(target.chatId, type, media.media_id));
  }

  /** A markdown message into the chat (`aibot_send_msg`): for replies with no message to answer. */
  private async proactive(chatId: string, text: string): Promise<void> {
    await this.call((c) => c.sendMessage(chatId, { msgtype: "markdown", markdown: { content: text } }));
  }

  /**
   * Starts a reply: a `stream` frame answering the message (`replyToId` is its req_id), finished at once unless
   * `streaming`. Without a req_id the text is kept and sent as one markdown message when the stream ends.
   */
  async send(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<string> {
    const streaming = options?.stream === true && options.final !== true;
    const streamId = target.replyToId ? generateReqId("stream") : `local_${randomUUID()}`;
    if (!target.replyToId) {
      if (!streaming) await this.proactive(target.chatId, text);
      else this.streams.set(streamId, { reqId: null, chatId: target.chatId, buffered: text });
      return streamId;
    }
    const reqId = target.replyToId;
    await this.call((c) => c.replyStream({ headers: { req_id: reqId } }, streamId, text, !streaming));
    if (streaming) this.streams.set(streamId, { reqId, chatId: target.chatId, buffered: "" });
    return streamId;
  }

  /**
   * Replaces a streamed reply's text (WeCom shows each frame's content in place of the last); `final` finishes it.
   * A stream WeCom no longer takes (expired, req_id spent) ends as a new markdown message with the final text.
   */
  async edit(_target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    const open = this.streams.get(messageId);
    if (!open) return;
    const final = options?.final === true;
    if (final) this.streams.delete(messageId);
    if (!open.reqId) {
      open.buffered = text;
      if (final) await this.proactive(open.chatId, text);
      return;
    }
    const reqId = open.reqId;
    try {
      await this.call((c) => c.replyStream({ headers: { req_id: reqId } }, messageId, text, final));
    } catch (err) {
      const code = (err as { errcode?: number }).errcode;
      if (!final || code === undefined || !EXPIRED_CODES.has(code)) throw err;
      await this.proactive(open.chatId, text);
    }
  }
}
