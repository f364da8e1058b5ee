// Slack: events over Socket Mode (upstream's mode, `app_token`; slack-socket.ts, held by one gateway process at a
// time under a lease) or the Events API webhook (https://api.slack.com/apis/events-api), and replies over the Web
// API (chat.postMessage, chat.update) on plain fetch with a configurable `api_base`. Every webhook delivery is
// verified with the app's signing secret (https://api.slack.com/authentication/verifying-requests-from-slack): `v0=`
// HMAC-SHA256 of `v0:<timestamp>:<raw body>`, the timestamp within five minutes.
import { createHmac } from "node:crypto";
import type { Logger } from "pino";
import { callPlatform, downloadPlatformFile, retryAfterHeaderMs, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type ConnectionStatusSink, type InboundFile, type InboundMessage, type InboundSink, type OutboundFile, type ReplyTarget, type WebhookAnswer, type WebhookRequest } from "./types.js";
import { slackMode, type SlackConfig } from "./config.js";
import { LeaseHeldConnection, leaseNameFor } from "./lease-hold.js";
import { SlackSocketConnection } from "./slack-socket.js";
import type { LeaseStore } from "./store.js";
import { safeEqual } from "./telegram.js";

/** Slack truncates a message's text past 40,000 characters. */
export const SLACK_MAX_CHARS = 40_000;
/** chat.update is a Tier 3 method (~50 a minute): one edit a second and a bit per message. */
export const SLACK_EDIT_INTERVAL_MS = 1200;
/** How old a signed request may be (Slack's own recommendation: five minutes). */
const MAX_SKEW_S = 300;
/** Error codes that mean the bot token no longer works. */
const AUTH_ERRORS = new Set(["invalid_auth", "not_authed", "token_revoked", "account_inactive", "token_expired"]);

interface SlackEvent {
  type: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  channel?: string;
  channel_type?: string;
  ts?: string;
  thread_ts?: string;
  files?: { id?: string; name?: string; mimetype?: string; size?: number; url_private?: string; url_private_download?: string }[];
}

/** Slack's upload limit for one file (1 GB). */
export const SLACK_MAX_UPLOAD_BYTES = 1_000_000_000;

/** The files of a message event (`file_share`), with a URL to download them from. */
function filesOf(e: SlackEvent): InboundFile[] {
  if (!Array.isArray(e.files)) return [];
  return e.files.flatMap((f, i): InboundFile[] => {
    if (!f || typeof f !== "object") return [];
    const url = f.url_private_download ?? f.url_private;
    if (typeof url !== "string") return [];
    const image = typeof f.mimetype === "string" && f.mimetype.startsWith("image/");
    return [{ ref: url, filename: (typeof f.name === "string" && f.name) || `slack-file-${f.id ?? i}${image ? ".png" : ".bin"}`, size: typeof f.size === "number" ? f.size : null, kind: image ? "image" : "file" }];
  });
}

/** Reads a Web API answer: `ok: true`; HTTP 429 or `ratelimited` waits `Retry-After`; 5xx retried; auth errors `auth`. */
function judge(answer: PlatformAnswer): Verdict {
  const body = answer.body ?? {};
  if (answer.status === 429 || body.error === "ratelimited") return { kind: "retry", afterMs: retryAfterHeaderMs(answer.headers) ?? 1000 };
  if (answer.status >= 500) return { kind: "retry" };
  if (answer.status === 200 && body.ok === true) return { kind: "ok" };
  const code = typeof body.error === "string" ? body.error : `HTTP ${answer.status}`;
  return { kind: "fail", error: new PlatformError("slack", AUTH_ERRORS.has(code) ? "auth" : "other", `Slack refused the call: ${code}`) };
}

/** What the Slack adapter needs besides its section; Socket Mode needs `logger`, `lease` and `holderId`. */
export interface SlackDeps {
  retry?: RetryPolicy;
  counter?: { calls: number };
  now?: () => number;
  /** The bot's user id, when known ahead; Socket Mode learns it from each envelope's `authorizations` (upstream). */
  botUserId?: string;
  logger?: Logger;
  lease?: LeaseStore;
  /** This process's lease-holder id. */
  holderId?: string;
  /** How long the Socket Mode lease lasts without renewal, in ms (default 30 000; renewed every third of it). */
  leaseMs?: number;
  /** The provider's connection status sink (the service wires it to the channel store). */
  setStatus?: ConnectionStatusSink;
}

/** The Slack adapter (upstream slack.py): Socket Mode when `app_token` is set, else the Events API webhook. */
export class SlackAdapter implements ChannelAdapter {
  readonly provider = "slack";
  readonly capabilities: AdapterCapabilities;
  readonly mode: "socket" | "webhook";
  /** The Socket Mode session (null in webhook mode). */
  readonly socket: SlackSocketConnection | null = null;
  private sink: InboundSink | null = null;
  private botUserId: string | undefined;
  /** Socket Mode only: the session, held by one process at a time (lease `slack-socket:*`). */
  private readonly held: LeaseHeldConnection | null = null;

  constructor(private readonly config: SlackConfig, private readonly deps: SlackDeps = {}) {
    this.capabilities = { editMessages: true, maxMessageChars: SLACK_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? SLACK_EDIT_INTERVAL_MS };
    this.botUserId = deps.botUserId;
    this.mode = slackMode(config);
    if (this.mode === "socket") {
      if (!deps.logger || !deps.lease || !deps.holderId) throw new Error("Slack Socket Mode needs a logger, a lease store and a holder id");
      const socket = (this.socket = new SlackSocketConnection({ appToken: config.app_token, apiBase: config.api_base, logger: deps.logger, counter: deps.counter, onEvent: (p) => this.onSocketEvent(p) }));
      const lease = { lease: deps.lease, name: leaseNameFor("slack-socket", config.app_token), holderId: deps.holderId, leaseMs: deps.leaseMs ?? 30_000 };
      const logger = deps.logger;
      this.held = new LeaseHeldConnection(lease, (held) => socket.run(held), async (err) => {
        // A refused app token: reconnecting cannot help; say so once, show it in Settings.
        logger.error({ provider: "slack", err: err.message }, "slack socket mode refused; the channel stops receiving");
        await deps.setStatus?.("broken");
      });
    }
  }

  /** False once Slack refused the app token: the channel no longer receives (Socket Mode). */
  get receiving(): boolean {
    return this.held?.receiving ?? true;
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.held?.start();
  }

  async stop(): Promise<void> {
    await this.held?.stop();
    this.sink = null;
  }

  /** An acked `events_api` payload: learns the bot's id (upstream reads `authorizations`), queues the message. */
  private onSocketEvent(payload: Record<string, any>): void {
    const auth: Record<string, unknown> | undefined = Array.isArray(payload.authorizations) ? payload.authorizations.find((a: Record<string, unknown> | null) => typeof a === "object" && a !== null) : undefined;
    if (!this.botUserId && typeof auth?.user_id === "string" && auth.user_id) this.botUserId = auth.user_id;
    if (payload.type !== "event_callback" || typeof payload.event_id !== "string" || !payload.event) return;
    const team = payload.team_id ?? payload.team ?? payload.event.team ?? null;
    const message = this.toInbound(payload.event_id, typeof team === "string" ? team : null, payload.event as SlackEvent);
    if (message && this.sink) this.sink(message).catch((err) => this.deps.logger?.warn({ provider: "slack", err: (err as Error).message }, "slack message not queued"));
  }

  private call(method: string, body: unknown): Promise<PlatformAnswer> {
    const url = `${this.config.api_base.replace(/\/+$/, "")}/${method}`;
    return callPlatform("slack", url, body, judge, { headers: { authorization: `Bearer ${this.config.bot_token}` }, policy: this.deps.retry, counter: this.deps.counter });
  }

  /** True when the request carries a valid, fresh signature over its raw body. */
  verify(request: WebhookRequest): boolean {
    const ts = request.headers["x-slack-request-timestamp"];
    const sig = request.headers["x-slack-signature"];
    if (typeof ts !== "string" || typeof sig !== "string" || !/^\d+$/.test(ts)) return false;
    const now = Math.floor((this.deps.now ?? Date.now)() / 1000);
    if (Math.abs(now - Number(ts)) > MAX_SKEW_S) return false;
    const expected = `v0=${createHmac("sha256", this.config.signing_secret).update(`v0:${ts}:${request.rawBody}`).digest("hex")}`;
    return safeEqual(sig, expected);
  }

  async handleWebhook(request: WebhookRequest): Promise<WebhookAnswer> {
    if (this.mode === "socket") return { status: 404, body: { detail: "Slack runs in Socket Mode here (channels.slack.app_token); there is no events webhook" } };
    if (!this.verify(request)) return { status: 401, body: { detail: "Invalid or missing Slack request signature" } };
    let payload: { type?: string; challenge?: string; event_id?: string; team_id?: string; event?: SlackEvent };
    try {
      payload = JSON.parse(request.rawBody) as typeof payload;
    } catch {
      return { status: 400, body: { detail: "Body is not a Slack event (JSON)" } };
    }
    if (payload.type === "url_verification") return { status: 200, body: { challenge: payload.challenge } };
    if (payload.type === "event_callback" && payload.event && payload.event_id) {
      const message = this.toInbound(payload.event_id, payload.team_id ?? null, payload.event);
      if (message && this.sink) await this.sink(message);
    }
    // Slack wants an answer within 3 seconds; the run continues in the background.
    return { status: 200, body: { ok: true } };
  }

  private toInbound(eventId: string, teamId: string | null, e: SlackEvent): InboundMessage | null {
    // The bot's own messages (bot_id) and edits/joins (subtypes) are not user messages; a file share is.
    if ((e.type !== "message" && e.type !== "app_mention") || e.bot_id || (e.subtype && e.subtype !== "file_share") || typeof e.user !== "string" || !e.user || typeof e.channel !== "string" || !e.channel) return null;
    const isDirect = e.channel_type === "im";
    // Upstream strips the bot's `<@U...>` mention; without the bot's id, any leading mention is the bot's.
    const raw = typeof e.text === "string" ? e.text : "";
    const mentionRe = this.botUserId ? new RegExp(`<@${this.botUserId}(\\|[^>]*)?>`, "g") : /^\s*<@[A-Z0-9]+(\|[^>]*)?>/;
    const mentioned = isDirect || e.type === "app_mention" || mentionRe.test(raw);
    const text = raw.replace(mentionRe, "").trim();
    return {
      provider: "slack", eventId, userId: e.user, userName: null, workspaceId: teamId, chatId: e.channel,
      topicId: isDirect ? null : (e.thread_ts ?? e.ts ?? null), text, isDirect, mentioned, receivedAt: Date.now(), files: filesOf(e),
    };
  }

  readonly maxUploadBytes = SLACK_MAX_UPLOAD_BYTES;

  /**
   * Downloads `url_private_download` with the bot token. The token goes only to Slack's own hosts (`*.slack.com`)
   * or the configured `api_base`'s origin: an event naming any other URL is refused.
   */
  async downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    let url: URL;
    try {
      url = new URL(file.ref);
    } catch {
      throw new PlatformError("slack", "other", "Slack file URL is not a URL");
    }
    const slackHost = url.protocol === "https:" && (url.hostname === "slack.com" || url.hostname.endsWith(".slack.com"));
    if (!slackHost && url.origin !== new URL(this.config.api_base).origin) throw new PlatformError("slack", "other", "Slack file URL is not on a Slack host");
    return downloadPlatformFile("slack", url.href, file.filename, maxBytes, { headers: { authorization: `Bearer ${this.config.bot_token}` }, counter: this.deps.counter });
  }

  /**
   * Slack's external upload (files.upload is retired): files.getUploadURLExternal, the bytes POSTed to the
   * upload URL it gives, then files.completeUploadExternal sharing the file into the conversation.
   */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const ticket = await this.call("files.getUploadURLExternal", new URLSearchParams({ filename: file.filename, length: String(file.data.length) }));
    const uploadUrl = String(ticket.body?.upload_url ?? "");
    const fileId = String(ticket.body?.file_id ?? "");
    if (!uploadUrl || !fileId) throw new PlatformError("slack", "other", "Slack gave no upload_url for the file");
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(file.data)], { type: file.contentType }), file.filename);
    await callPlatform("slack", uploadUrl, form, (a) => (a.status === 200 ? { kind: "ok" } : a.status === 429 || a.status >= 500 ? { kind: "retry" } : { kind: "fail", error: new PlatformError("slack", "other", `Slack refused the file upload: HTTP ${a.status}`) }), { policy: this.deps.retry, counter: this.deps.counter });
    const complete = new URLSearchParams({ files: JSON.stringify([{ id: fileId, title: file.filename }]), channel_id: target.chatId });
    if (target.topicId) complete.set("thread_ts", target.topicId);
    await this.call("files.completeUploadExternal", complete);
  }

  async send(target: ReplyTarget, text: string): Promise<string> {
    const body: Record<string, unknown> = { channel: target.chatId, text };
    if (target.topicId) body.thread_ts = target.topicId;
    const answer = await this.call("chat.postMessage", body);
    return String(answer.body?.ts ?? "");
  }

  async edit(target: ReplyTarget, messageId: string, text: string): Promise<void> {
    await this.call("chat.update", { channel: target.chatId, ts: messageId, text });
  }
}
