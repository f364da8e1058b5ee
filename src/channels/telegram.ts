// Telegram over the Bot API (https://core.telegram.org/bots/api), on plain fetch: the API is a handful of JSON
// POSTs (getUpdates, sendMessage, editMessageText), and `api_base` must point anywhere (tests use a local fake).
// Two inbound modes as upstream: long polling (getUpdates, held by one process at a time through a lease another
// takes over when the holder dies) and a webhook verified by the `X-Telegram-Bot-Api-Secret-Token` header.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import { callPlatform, downloadPlatformFile, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import type { LeaseStore } from "./store.js";
import { FileTooLargeError, PlatformError, type AdapterCapabilities, type ChannelAdapter, type InboundFile, type InboundMessage, type InboundSink, type OutboundFile, type ReplyTarget, type WebhookAnswer, type WebhookRequest } from "./types.js";
import type { TelegramConfig } from "./config.js";

/** Telegram's message length limit (characters). */
export const TELEGRAM_MAX_CHARS = 4096;
/** Upstream's per-chat edit interval (telegram.py STREAM_EDIT_MIN_INTERVAL_SECONDS): one edit a second. */
export const TELEGRAM_EDIT_INTERVAL_MS = 1000;

/** The parts of a Telegram `Update` read here. */
interface Update {
  update_id: number;
  message?: {
    message_id: number;
    text?: string;
    caption?: string;
    chat: { id: number; type: string };
    from?: { id: number; is_bot?: boolean; username?: string; first_name?: string };
    message_thread_id?: number;
    entities?: { type: string; offset: number; length: number }[];
    document?: { file_id: string; file_name?: string; mime_type?: string; file_size?: number };
    photo?: { file_id: string; file_size?: number; width?: number; height?: number }[];
  };
}

/** Telegram's limit on files a bot sends (sendDocument: 50 MB). */
export const TELEGRAM_MAX_UPLOAD_BYTES = 50_000_000;

/** The files of a message: the document, and the largest size of a photo (upstream `_extract_inbound_files`). */
function filesOf(m: NonNullable<Update["message"]>): InboundFile[] {
  const files: InboundFile[] = [];
  if (m.photo?.length) {
    const best = m.photo.reduce((a, b) => ((b.width ?? 0) * (b.height ?? 0) > (a.width ?? 0) * (a.height ?? 0) ? b : a));
    files.push({ ref: best.file_id, filename: `telegram-photo-${m.message_id}.jpg`, size: best.file_size ?? null, kind: "image" });
  }
  if (m.document?.file_id) {
    const image = m.document.mime_type?.startsWith("image/") ?? false;
    files.push({ ref: m.document.file_id, filename: m.document.file_name || `telegram-document-${m.message_id}.bin`, size: m.document.file_size ?? null, kind: image ? "image" : "file" });
  }
  return files;
}

/** What the Telegram adapter needs besides its config section. */
export interface TelegramDeps {
  logger: Logger;
  lease: LeaseStore;
  /** This process's lease-holder id. */
  holderId: string;
  /** The bot's username (without `@`), to recognise mentions in groups (channel_connections.telegram.bot_username). */
  botUsername?: string;
  retry?: RetryPolicy;
  counter?: { calls: number };
}

/** Reads a Bot API answer: `ok: true` accepted; 429 waits `retry_after`; 5xx retried; 401/403/404 `auth` (token revoked). */
function judge(answer: PlatformAnswer): Verdict {
  const body = answer.body ?? {};
  if (answer.status === 200 && body.ok === true) return { kind: "ok" };
  if (answer.status === 429) {
    const after = Number((body.parameters as { retry_after?: number } | undefined)?.retry_after);
    return { kind: "retry", afterMs: Number.isFinite(after) ? after * 1000 : 1000 };
  }
  if (answer.status >= 500) return { kind: "retry" };
  const description = typeof body.description === "string" ? body.description : `HTTP ${answer.status}`;
  // A revoked or wrong token: Telegram answers 401 Unauthorized (404 for a malformed one).
  const kind = answer.status === 401 || answer.status === 404 ? "auth" : "other";
  return { kind: "fail", error: new PlatformError("telegram", kind, `Telegram refused the call: ${description}`) };
}

/** The Telegram adapter (upstream telegram.py, on the documented HTTP API). */
export class TelegramAdapter implements ChannelAdapter {
  readonly provider = "telegram";
  readonly capabilities: AdapterCapabilities;
  private sink: InboundSink | null = null;
  private stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly leaseName: string;

  constructor(private readonly config: TelegramConfig, private readonly deps: TelegramDeps) {
    this.capabilities = { editMessages: true, maxMessageChars: TELEGRAM_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? TELEGRAM_EDIT_INTERVAL_MS };
    // One poller per bot, whatever process: the lease is named by a hash of the token (never the token itself).
    this.leaseName = `telegram-poll:${createHash("sha256").update(config.bot_token).digest("hex").slice(0, 16)}`;
  }

  private url(method: string): string {
    return `${this.config.api_base.replace(/\/+$/, "")}/bot${this.config.bot_token}/${method}`;
  }

  private call(method: string, body: unknown, signal?: AbortSignal): Promise<PlatformAnswer> {
    return callPlatform("telegram", this.url(method), body, judge, { policy: this.deps.retry, counter: this.deps.counter, signal });
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    if (this.config.mode === "polling") this.loop = this.pollLoop();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop?.catch(() => undefined);
    await this.deps.lease.releaseLease(this.leaseName, this.deps.holderId).catch(() => undefined);
  }

  /** Long polling while this process holds the lease; the lease lives a poll and a margin, renewed before each poll. */
  private async pollLoop(): Promise<void> {
    const signal = this.stopping.signal;
    const leaseMs = (this.config.polling_timeout + 5) * 1000;
    let offset: number | undefined;
    while (!signal.aborted) {
      try {
        if (!(await this.deps.lease.acquireLease(this.leaseName, this.deps.holderId, leaseMs))) {
          await abortableSleep(Math.min(leaseMs / 4, 2000), signal);
          continue;
        }
        const answer = await this.call("getUpdates", { offset, timeout: this.config.polling_timeout, allowed_updates: ["message"] }, AbortSignal.any([signal, AbortSignal.timeout(leaseMs)]));
        const updates = (answer.body?.result ?? []) as Update[];
        for (const update of updates) {
          offset = update.update_id + 1;
          await this.accept(update);
        }
        // A zero poll timeout answers at once: pace the loop instead of spinning on the API.
        if (updates.length === 0 && this.config.polling_timeout === 0) await abortableSleep(100, signal);
      } catch (err) {
        if (signal.aborted) break;
        this.deps.logger.warn({ provider: "telegram", err: (err as Error).message }, "telegram long poll failed; retrying");
        await abortableSleep(1000, signal);
      }
    }
  }

  async handleWebhook(request: WebhookRequest): Promise<WebhookAnswer> {
    const given = request.headers["x-telegram-bot-api-secret-token"];
    if (this.config.mode !== "webhook" || typeof given !== "string" || !safeEqual(given, this.config.webhook_secret)) {
      return { status: 401, body: { detail: "Invalid or missing X-Telegram-Bot-Api-Secret-Token" } };
    }
    let update: Update;
    try {
      update = JSON.parse(request.rawBody) as Update;
    } catch {
      return { status: 400, body: { detail: "Body is not a Telegram Update (JSON)" } };
    }
    await this.accept(update);
    return { status: 200, body: { ok: true } };
  }

  /** Queues the update's message, when it carries one from a person. */
  private async accept(update: Update): Promise<void> {
    const message = this.toInbound(update);
    if (message && this.sink) await this.sink(message);
  }

  private toInbound(update: Update): InboundMessage | null {
    const m = update.message;
    if (typeof update.update_id !== "number" || !m?.from || m.from.is_bot) return null;
    const raw = m.text ?? m.caption ?? "";
    const isDirect = m.chat.type === "private";
    const mention = this.deps.botUsername ? `@${this.deps.botUsername}` : null;
    const mentioned = isDirect || (mention !== null && raw.includes(mention));
    const text = mention ? raw.split(mention).join("").trim() : raw;
    return {
      provider: "telegram", eventId: String(update.update_id), userId: String(m.from.id), userName: m.from.username ?? m.from.first_name ?? null,
      workspaceId: null, chatId: String(m.chat.id), topicId: m.message_thread_id !== undefined ? String(m.message_thread_id) : null,
      text, isDirect, mentioned, receivedAt: Date.now(), files: filesOf(m),
    };
  }

  readonly maxUploadBytes = TELEGRAM_MAX_UPLOAD_BYTES;

  /**
   * getFile, then the file from `<api_base>/file/bot<token>/<file_path>` (the Bot API's download URL). The size
   * getFile reports is checked before the download.
   */
  async downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    const answer = await this.call("getFile", { file_id: file.ref });
    const info = (answer.body?.result ?? {}) as { file_path?: string; file_size?: number };
    if (typeof info.file_size === "number" && info.file_size > maxBytes) throw new FileTooLargeError(file.filename, maxBytes);
    if (!info.file_path) throw new PlatformError("telegram", "other", "Telegram gave no file_path for the file");
    const url = `${this.config.api_base.replace(/\/+$/, "")}/file/bot${this.config.bot_token}/${info.file_path}`;
    return downloadPlatformFile("telegram", url, file.filename, maxBytes, { counter: this.deps.counter });
  }

  /** sendDocument as multipart (the document's bytes as a file part, as the Bot API takes new files). */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const form = new FormData();
    form.set("chat_id", target.chatId);
    if (target.topicId) form.set("message_thread_id", target.topicId);
    form.set("document", new Blob([new Uint8Array(file.data)], { type: file.contentType }), file.filename);
    await this.call("sendDocument", form);
  }

  async send(target: ReplyTarget, text: string): Promise<string> {
    const body: Record<string, unknown> = { chat_id: target.chatId, text };
    if (target.topicId) body.message_thread_id = Number(target.topicId);
    const answer = await this.call("sendMessage", body);
    return String((answer.body?.result as { message_id?: number } | undefined)?.message_id ?? "");
  }

  async edit(target: ReplyTarget, messageId: string, text: string): Promise<void> {
    try {
      await this.call("editMessageText", { chat_id: target.chatId, message_id: Number(messageId), text });
    } catch (err) {
      // Telegram refuses an edit that changes nothing; the message already reads right.
      if (err instanceof PlatformError && /message is not modified/i.test(err.message)) return;
      throw err;
    }
  }
}

/** Constant-time comparison of two secrets (different lengths compare unequal). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
