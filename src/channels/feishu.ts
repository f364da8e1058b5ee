// Feishu / Lark: events over the long connection (upstream's default, feishu-ws.ts, held by one gateway process at a
// time under a lease) or the event callback (webhook); replies over the Open Platform REST API on plain fetch with a
// configurable `domain` (https://open.feishu.cn, https://open.larksuite.com, or a local fake). Replies are interactive cards, as
// upstream (feishu.py): the first text replies to the user's message (`im/v1/messages/{id}/reply`, in its thread in
// groups), later text patches the card (`PATCH im/v1/messages/{id}`, the card config has `update_multi`). Calls carry
// a tenant_access_token, cached until shortly before it expires and fetched again when the platform says it is stale.
import { callPlatform, downloadPlatformFile, retryAfterHeaderMs, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import { openDelivery, toInbound } from "./feishu-events.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type ConnectionStatusSink, type InboundFile, type InboundSink, type OutboundFile, type ReplyTarget, type WebhookAnswer, type WebhookRequest } from "./types.js";
import type { FeishuConfig } from "./config.js";
import { holdFeishuLongConnection, pauseUnlessAborted } from "./feishu-ws.js";
import { LeaseHeldConnection, leaseNameFor } from "./lease-hold.js";
import type { LeaseStore } from "./store.js";
import type { Logger } from "pino";

/** The longest text one card carries here: a card's content is capped at 30 KB, and a CJK character is 3 bytes. */
export const FEISHU_MAX_CHARS = 9000;
/** Updating one message is limited to 5 a second; one edit a second leaves room for the other chats. */
export const FEISHU_EDIT_INTERVAL_MS = 1000;
/** The largest file a bot may upload (`im/v1/files`: 30 MB; upstream skips larger ones too). */
export const FEISHU_MAX_UPLOAD_BYTES = 30 * 1024 * 1024;
/** The largest image `im/v1/images` takes (10 MB); a larger image goes as a file. */
const FEISHU_MAX_IMAGE_BYTES = 10 * 1024 * 1024;
/** A token is fetched again this long before the expiry the platform gave (its documented refresh margin). */
const TOKEN_MARGIN_MS = 5 * 60_000;
/** Codes that mean the tenant_access_token is invalid or expired: fetch a new one and try once more. */
const STALE_TOKEN_CODES = new Set([99991661, 99991663, 99991664, 99991668]);
/** Codes that mean the app's credentials are refused (bad app_id / app_secret, app disabled). */
const AUTH_CODES = new Set([10003, 10014, 99991543]);
/** Feishu's frequency-limit code (answered with HTTP 429 or 400 and `x-ogw-ratelimit-reset`). */
const RATE_LIMITED = 99991400;

/** A platform refusal of the token itself: the adapter fetches a new token and retries once. */
class StaleTokenError extends PlatformError {}

/** Reads an Open Platform answer: `code: 0` accepted; rate limits wait `x-ogw-ratelimit-reset`; 5xx retried. */
function judge(answer: PlatformAnswer): Verdict {
  const body = answer.body ?? {};
  const code = Number(body.code);
  if (answer.status === 429 || code === RATE_LIMITED) {
    const reset = Number(answer.headers.get("x-ogw-ratelimit-reset"));
    return { kind: "retry", afterMs: Number.isFinite(reset) && reset >= 0 ? reset * 1000 : (retryAfterHeaderMs(answer.headers) ?? 1000) };
  }
  if (answer.status >= 500) return { kind: "retry" };
  if (answer.status === 200 && code === 0) return { kind: "ok" };
  const what = `Feishu refused the call: ${Number.isFinite(code) ? `code ${code}` : `HTTP ${answer.status}`}${typeof body.msg === "string" ? ` (${body.msg})` : ""}`;
  if (STALE_TOKEN_CODES.has(code)) return { kind: "fail", error: new StaleTokenError("feishu", "auth", what) };
  return { kind: "fail", error: new PlatformError("feishu", AUTH_CODES.has(code) || answer.status === 401 ? "auth" : "other", what) };
}

/** The `file_type` of an upload by its extension (upstream `_upload_file`): xls, ppt, pdf, doc, else stream. */
export function feishuFileType(filename: string): string {
  const ext = filename.toLowerCase().split(".").at(-1) ?? "";
  if (["xls", "xlsx", "csv"].includes(ext)) return "xls";
  if (["ppt", "pptx"].includes(ext)) return "ppt";
  if (["doc", "docx"].includes(ext)) return "doc";
  return ext === "pdf" ? "pdf" : "stream";
}

/** An interactive card showing `text` as Markdown (upstream `_build_card_content`), updatable for every viewer. */
export function cardContent(text: string): string {
  return JSON.stringify({ config: { wide_screen_mode: true, update_multi: true }, elements: [{ tag: "markdown", content: text }] });
}

/** What the Feishu adapter needs besides its config section. */
export interface FeishuDeps {
  logger: Logger;
  /** Where the long connection's lease lives (the channel store, or Redis when scaled out). */
  lease: LeaseStore;
  /** This process's lease-holder id. */
  holderId: string;
  /** Long-connection lease lifetime without renewal, in ms (default 30 000; renewed every third of it). */
  leaseMs?: number;
  /** The provider's connection status sink (the service wires it to the channel store). */
  setStatus?: ConnectionStatusSink;
  retry?: RetryPolicy;
  counter?: { calls: number };
}

/** The Feishu / Lark adapter (upstream feishu.py): long connection (default) or event callback mode. */
export class FeishuAdapter implements ChannelAdapter {
  readonly provider = "feishu";
  readonly capabilities: AdapterCapabilities;
  private sink: InboundSink | null = null;
  private token: { value: string; expiresAt: number } | null = null;
  private tokenFetch: Promise<string> | null = null;
  /** Websocket mode only: the long connection, held by one process at a time (lease `feishu-ws:*`). */
  private readonly held: LeaseHeldConnection | null = null;

  constructor(private readonly config: FeishuConfig, private readonly deps: FeishuDeps) {
    this.capabilities = { editMessages: true, maxMessageChars: FEISHU_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? FEISHU_EDIT_INTERVAL_MS };
    if (config.mode !== "websocket") return;
    // One long connection per app and platform, whatever process holds it.
    const lease = { lease: deps.lease, name: leaseNameFor("feishu-ws", `${config.domain}|${config.app_id}`), holderId: deps.holderId, leaseMs: deps.leaseMs ?? 30_000 };
    this.held = new LeaseHeldConnection(lease, (held) => this.connectOnce(held), async (err) => {
      // A refused credential (the token call or the socket endpoint) is logged once and marks the connections broken.
      const refused = err instanceof PlatformError && err.kind === "auth";
      this.deps.logger.error({ provider: "feishu", err: err.message }, refused ? "feishu refused the app's credentials; the channel stops receiving" : "feishu long connection failed; the channel stops receiving");
      if (refused) await this.deps.setStatus?.("broken");
    });
  }

  /** False once the platform refused the app (websocket mode): the channel no longer receives. */
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

  /** One long connection; the credentials are checked first through the documented token call (clear refusal codes). */
  private async connectOnce(held: AbortSignal): Promise<void> {
    try {
      await this.tenantToken();
    } catch (err) {
      if (err instanceof PlatformError && err.kind === "auth") throw err;
      this.deps.logger.warn({ provider: "feishu", err: (err as Error).message }, "feishu token call failed; the long connection waits and tries again");
      await pauseUnlessAborted(5000, held);
      return;
    }
    const { app_id, app_secret, domain, encrypt_key } = this.config;
    await holdFeishuLongConnection({
      appId: app_id, appSecret: app_secret, domain: domain.replace(/\/+$/, ""), encryptKey: encrypt_key, logger: this.deps.logger,
      onMessage: async (message) => {
        if (this.sink) await this.sink(message);
      },
    }, held);
  }

  private url(path: string): string {
    return `${this.config.domain.replace(/\/+$/, "")}/open-apis/${path}`;
  }

  /** The cached tenant_access_token, fetched when absent or near its expiry (one fetch shared by concurrent callers). */
  private async tenantToken(): Promise<string> {
    if (this.token && Date.now() < this.token.expiresAt) return this.token.value;
    this.tokenFetch ??= (async () => {
      const answer = await callPlatform("feishu", this.url("auth/v3/tenant_access_token/internal"), { app_id: this.config.app_id, app_secret: this.config.app_secret }, judge, { policy: this.deps.retry, counter: this.deps.counter });
      const value = String(answer.body?.tenant_access_token ?? "");
      const expireS = Number(answer.body?.expire ?? 7200);
      this.token = { value, expiresAt: Date.now() + Math.max(60_000, expireS * 1000 - TOKEN_MARGIN_MS) };
      return value;
    })().finally(() => {
      this.tokenFetch = null;
    });
    return this.tokenFetch;
  }

  /** One authenticated API call; a stale token is dropped and the call made once more with a fresh one. */
  private async api(method: "POST" | "PATCH", path: string, body: unknown): Promise<PlatformAnswer> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.tenantToken();
      try {
        return await callPlatform("feishu", this.url(path), body, judge, { method, headers: { authorization: `Bearer ${token}` }, policy: this.deps.retry, counter: this.deps.counter });
      } catch (err) {
        if (!(err instanceof StaleTokenError) || attempt > 0) throw err;
        if (this.token?.value === token) this.token = null;
      }
    }
  }

  async handleWebhook(request: WebhookRequest): Promise<WebhookAnswer> {
    // In websocket mode no delivery secret is configured: an unverifiable callback must not start anything.
    if (this.config.mode !== "webhook") return { status: 404, body: { detail: "The Feishu channel receives over its long connection (channels.feishu.mode is websocket); no webhook is configured" } };
    const opened = openDelivery(request.headers, request.rawBody, { verificationToken: this.config.verification_token, encryptKey: this.config.encrypt_key });
    if (opened.kind === "refused") return { status: opened.status, body: { detail: opened.detail } };
    if (opened.kind === "challenge") return { status: 200, body: { challenge: opened.challenge } };
    const message = toInbound(opened.payload, Date.now());
    if (message && this.sink) await this.sink(message);
    // Feishu wants an answer within 3 seconds (else it redelivers); the run continues in the background.
    return { status: 200, body: {} };
  }

  /** Replies to the user's message with a message (in its thread in a group), or posts one into the chat; its id. */
  private async post(target: ReplyTarget, msgType: string, content: string): Promise<string> {
    const answer = target.replyToId
      ? await this.api("POST", `im/v1/messages/${encodeURIComponent(target.replyToId)}/reply`, { msg_type: msgType, content, reply_in_thread: Boolean(target.topicId) })
      : await this.api("POST", "im/v1/messages?receive_id_type=chat_id", { receive_id: target.chatId, msg_type: msgType, content });
    return String((answer.body?.data as { message_id?: string } | undefined)?.message_id ?? "");
  }

  /** Replies with an interactive card showing `text`. */
  async send(target: ReplyTarget, text: string): Promise<string> {
    return this.post(target, "interactive", cardContent(text));
  }

  readonly maxUploadBytes = FEISHU_MAX_UPLOAD_BYTES;

  /**
   * A user's file or image: `GET im/v1/messages/{message_id}/resources/{key}?type=file|image` with the tenant token,
   * read up to `maxBytes` (its Content-Length first). A token the platform calls stale is fetched again, once.
   */
  async downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    const slash = file.ref.indexOf("/");
    const url = this.url(`im/v1/messages/${encodeURIComponent(file.ref.slice(0, slash))}/resources/${encodeURIComponent(file.ref.slice(slash + 1))}?type=${file.kind}`);
    for (let attempt = 0; ; attempt++) {
      const token = await this.tenantToken();
      try {
        return await downloadPlatformFile("feishu", url, file.filename, maxBytes, { headers: { authorization: `Bearer ${token}` }, counter: this.deps.counter });
      } catch (err) {
        // A stale token is answered 400 (code 99991663) or 401 here: one more try with a fresh one.
        if (!(err instanceof PlatformError) || !/HTTP 40[01]$/.test(err.message) || attempt > 0) throw err;
        if (this.token?.value === token) this.token = null;
      }
    }
  }

  /**
   * A presented output: an image (up to 10 MB) through `im/v1/images`, anything else through `im/v1/files`
   * (multipart), then an `image` / `file` message with the key it gave, where the answer went (upstream send_file).
   */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const image = file.contentType.startsWith("image/") && file.data.length <= FEISHU_MAX_IMAGE_BYTES;
    const blob = new Blob([new Uint8Array(file.data)], { type: file.contentType });
    const form = new FormData();
    if (image) {
      form.set("image_type", "message");
      form.set("image", blob, file.filename);
    } else {
      form.set("file_type", feishuFileType(file.filename));
      form.set("file_name", file.filename);
      form.set("file", blob, file.filename);
    }
    const answer = await this.api("POST", image ? "im/v1/images" : "im/v1/files", form);
    const data = (answer.body?.data ?? {}) as { image_key?: string; file_key?: string };
    const key = image ? data.image_key : data.file_key;
    if (!key) throw new PlatformError("feishu", "other", "Feishu gave no key for the uploaded file");
    await this.post(target, image ? "image" : "file", JSON.stringify(image ? { image_key: key } : { file_key: key }));
  }

  /** Patches a sent card with the new text. */
  async edit(_target: ReplyTarget, messageId: string, text: string): Promise<void> {
    await this.api("PATCH", `im/v1/messages/${encodeURIComponent(messageId)}`, { content: cardContent(text) });
  }
}
