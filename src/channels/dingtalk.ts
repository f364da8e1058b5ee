// DingTalk (upstream dingtalk.py): chatbot messages arrive over Stream mode (dingtalk-stream.ts), held by one gateway
// process at a time under a lease; replies go out over the robot API with an app access token: `oToMessages/batchSend`
// to a user (1:1), `groupMessages/send` to a group, as upstream's `sampleMarkdown`. A robot message cannot be edited:
// without `card_template_id` an answer is sent once the run ends (in 5000-character pieces), as upstream. With it, a
// run's answer streams into an AI Card (`card/instances/createAndDeliver`, then `PUT card/streaming`, finalized at the end).
// Files both ways: dingtalk-files.ts.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { callPlatform, downloadPlatformFile, retryAfterHeaderMs, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import { DINGTALK_MAX_UPLOAD_BYTES, dingtalkFiles, downloadUrlOf, fileMessage, judgeOapi, mediaForm, uploadKind } from "./dingtalk-files.js";
import { DINGTALK_BOT_TOPIC, DingTalkStream } from "./dingtalk-stream.js";
import { LeaseHeldConnection, leaseNameFor } from "./lease-hold.js";
import type { LeaseStore } from "./store.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type InboundFile, type InboundMessage, type InboundSink, type OutboundFile, type ReplyOptions, type ReplyTarget, type ConnectionStatusSink } from "./types.js";
import type { DingTalkConfig } from "./config.js";

/** The longest Markdown text sent in one robot message (characters; DingTalk's markdown body limit is about 5000). */
export const DINGTALK_MAX_CHARS = 5000;
/** Card streaming updates of one card at most once a second by default (DingTalk throttles the app's API QPS). */
export const DINGTALK_CARD_INTERVAL_MS = 1000;
/** Upstream `_TOKEN_REFRESH_MARGIN_SECONDS`: a token is fetched again 5 minutes before it expires. */
const TOKEN_MARGIN_MS = 300_000;

/** What the DingTalk adapter needs besides its config section. */
export interface DingTalkDeps {
  logger: Logger;
  lease: LeaseStore;
  /** This process's lease-holder id. */
  holderId: string;
  retry?: RetryPolicy;
  counter?: { calls: number };
  /** How long the stream lease lasts without renewal, in ms (default 30 000; renewed every third of it). */
  leaseMs?: number;
  /** The provider's connection status sink (the service wires it to the channel store). */
  setStatus?: ConnectionStatusSink;
}

/** Reads an OpenAPI answer: 2xx ok; 429 / QPS limit waits; 5xx retried; a refused token or secret is `auth`. */
export function judgeApi(answer: PlatformAnswer): Verdict {
  if (answer.status >= 200 && answer.status < 300) return { kind: "ok" };
  const body = answer.body ?? {};
  const code = String(body.code ?? "");
  if (answer.status === 429 || /qpslimit|throttl/i.test(code)) return { kind: "retry", afterMs: retryAfterHeaderMs(answer.headers) ?? 1000 };
  if (answer.status >= 500) return { kind: "retry" };
  const auth = answer.status === 401 || /auth|token|secret|appkey/i.test(code);
  const detail = `${code} ${String(body.message ?? "")}`.trim() || `HTTP ${answer.status}`;
  return { kind: "fail", error: new PlatformError("dingtalk", auth ? "auth" : "other", `DingTalk refused the call: ${detail}`) };
}

/**
 * Adapts Markdown to DingTalk's sampleMarkdown renderer (upstream `_adapt_markdown_for_dingtalk`): fenced code
 * becomes a quote, inline code bold, a table's rows `> **header**: cell` lines, a horizontal rule a line of ─.
 */
export function adaptMarkdown(text: string): string {
  let out = text.replace(/```(\w*)\n([\s\S]*?)```/g, (_m, lang: string, code: string) => `${lang ? `> **${lang}**\n` : ""}${code.replace(/\n$/, "").split("\n").map((l) => `> ${l}`).join("\n")}\n`);
  out = out.replace(/`([^`\n]+)`/g, "**$1**");
  const lines = out.split("\n");
  const result: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim().startsWith("|") && /^\|[-:| ]+\|$/.test(lines[i + 1]?.trim() ?? "")) {
      const headers = lines[i].trim().replace(/^\||\|$/g, "").split("|").map((h) => h.trim());
      for (i += 2; i < lines.length && lines[i].trim().startsWith("|"); i++) {
        const cells = lines[i].trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
        headers.forEach((h, k) => k < cells.length && result.push(`> **${h}**: ${cells[k]}`));
        result.push("");
      }
      i--;
    } else result.push(lines[i]);
  }
  return result.join("\n").replace(/^-{3,}$/gm, "───────────");
}

/** The text items of a richText message (its inline images dropped); anything not a list of items reads as "". */
function richTextOf(items: unknown): string {
  if (!Array.isArray(items)) return "";
  return items.map((p: unknown) => (p && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : "")).filter(Boolean).join(" ");
}

/** The DingTalk adapter (upstream dingtalk.py, on the documented Stream protocol and robot API). */
export class DingTalkAdapter implements ChannelAdapter {
  readonly provider = "dingtalk";
  readonly capabilities: AdapterCapabilities;
  readonly stream: DingTalkStream;
  private sink: InboundSink | null = null;
  private token: { value: string; until: number } | null = null;
  private tokenFetch: Promise<string> | null = null;
  private readonly held: LeaseHeldConnection;

  constructor(private readonly config: DingTalkConfig, private readonly deps: DingTalkDeps) {
    const card = Boolean(config.card_template_id);
    this.capabilities = { editMessages: card, finalizeEdits: card, maxMessageChars: DINGTALK_MAX_CHARS, minEditIntervalMs: card ? config.stream_edit_interval_ms ?? DINGTALK_CARD_INTERVAL_MS : 0 };
    // One stream connection per app, whatever process: the lease is named by a hash of the client id.
    const lease = { lease: deps.lease, name: leaseNameFor("dingtalk-stream", config.client_id), holderId: deps.holderId, leaseMs: deps.leaseMs ?? 30_000 };
    this.held = new LeaseHeldConnection(lease, (held) => this.stream.run(held), async (err) => {
      // Refused credentials: reconnecting cannot help; say so once, mark the connections broken.
      this.deps.logger.error({ provider: "dingtalk", err: err.message }, "dingtalk stream refused for good; the channel stops receiving");
      await this.deps.setStatus?.("broken");
    });
    this.stream = new DingTalkStream({
      apiBase: config.api_base, clientId: config.client_id, clientSecret: config.client_secret, logger: deps.logger, counter: deps.counter,
      onCallback: (topic, data) => topic === DINGTALK_BOT_TOPIC && this.onMessage(data),
    });
  }

  /** False once DingTalk refused the app's credentials: the channel no longer receives. */
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

  private onMessage(data: Record<string, any>): void {
    const message = this.toInbound(data);
    if (message && this.sink) {
      this.sink(message).catch((err) => this.deps.logger.warn({ provider: "dingtalk", err: (err as Error).message }, "dingtalk message not queued"));
    }
  }

  /** A chatbot message as an InboundMessage: a DM keys on the sender, a group on its conversation, one topic per message (upstream). */
  private toInbound(m: Record<string, any>): InboundMessage | null {
    const sender = typeof m.senderStaffId === "string" ? m.senderStaffId : "";
    const msgId = typeof m.msgId === "string" ? m.msgId : "";
    const group = String(m.conversationType ?? "1").trim() === "2";
    const chatId = group ? String(m.conversationId ?? "") : sender;
    const files = dingtalkFiles(m);
    const text = m.msgtype === "text" ? String(m.text?.content ?? "") : m.msgtype === "richText" ? richTextOf(m.content?.richText) : "";
    if (!sender || !msgId || !chatId || (!text.trim() && !files.length)) return null;
    return {
      provider: "dingtalk", eventId: msgId, userId: sender, userName: typeof m.senderNick === "string" ? m.senderNick : null, workspaceId: null,
      chatId, topicId: group ? msgId : null, replyToId: null, text: text.trim(), isDirect: !group, mentioned: !group || m.isInAtList !== false, receivedAt: Date.now(), files,
    };
  }

  /** The app access token (`POST /v1.0/oauth2/accessToken`), cached until 5 minutes before it expires. */
  private accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.until) return Promise.resolve(this.token.value);
    this.tokenFetch ??= (async () => {
      try {
        const answer = await callPlatform("dingtalk", this.url("v1.0/oauth2/accessToken"), { appKey: this.config.client_id, appSecret: this.config.client_secret }, judgeApi, { policy: this.deps.retry, counter: this.deps.counter });
        const value = answer.body?.accessToken;
        if (typeof value !== "string" || !value) throw new PlatformError("dingtalk", "other", "DingTalk's token answer has no accessToken");
        const expireIn = Number(answer.body?.expireIn) || 7200;
        this.token = { value, until: Date.now() + expireIn * 1000 - TOKEN_MARGIN_MS };
        return value;
      } finally {
        this.tokenFetch = null;
      }
    })();
    return this.tokenFetch;
  }

  private url(path: string): string {
    return `${this.config.api_base.replace(/\/+$/, "")}/${path}`;
  }

  /** A robot API call with the token. */
  private robot(path: string, body: Record<string, unknown>, method: "POST" | "PUT" = "POST"): Promise<PlatformAnswer> {
    return this.withToken((token) => callPlatform("dingtalk", this.url(path), body, judgeApi, { method, headers: { "x-acs-dingtalk-access-token": token }, policy: this.deps.retry, counter: this.deps.counter }));
  }

  /** Runs `call` with the app access token; a token refused while cached is dropped and fetched again once. */
  private async withToken<T>(call: (token: string) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.accessToken();
      try {
        return await call(token);
      } catch (err) {
        if (!(err instanceof PlatformError && err.kind === "auth") || attempt > 0) throw err;
        this.token = null;
      }
    }
  }

  /**
   * Sends `text`: a run's streamed answer into a new AI Card when `card_template_id` is set (resolves its
   * outTrackId), else as sampleMarkdown to the group (a target with a topic: upstream keys each group message as one)
   * or to the user (resolves DingTalk's `processQueryKey`).
   */
  async send(target: ReplyTarget, text: string, options: ReplyOptions = {}): Promise<string> {
    if (this.config.card_template_id && options.stream) return this.createCard(target, text, options.final === true);
    return this.robotMessage(target, { msgKey: "sampleMarkdown", msgParam: JSON.stringify({ title: "DeerFlow", text: adaptMarkdown(text) }) });
  }

  /** Sends a robot message to the group (a target with a topic) or the user; resolves its `processQueryKey`. */
  private async robotMessage(target: ReplyTarget, message: { msgKey: string; msgParam: string }): Promise<string> {
    const common = { ...message, robotCode: this.config.client_id };
    const answer = target.topicId
      ? await this.robot("v1.0/robot/groupMessages/send", { ...common, openConversationId: target.chatId })
      : await this.robot("v1.0/robot/oToMessages/batchSend", { ...common, userIds: [target.chatId] });
    return String(answer.body?.processQueryKey ?? "");
  }

  readonly maxUploadBytes = DINGTALK_MAX_UPLOAD_BYTES;

  /**
   * A user's picture or file: its `downloadCode` exchanged for a `downloadUrl` (`POST v1.0/robot/messageFiles/download`
   * with the robotCode), then that URL fetched, at most `maxBytes`. @throws FileTooLargeError, PlatformError.
   */
  async downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    const answer = await this.robot("v1.0/robot/messageFiles/download", { downloadCode: file.ref, robotCode: this.config.client_id });
    return downloadPlatformFile("dingtalk", downloadUrlOf(answer), file.filename, maxBytes, { counter: this.deps.counter });
  }

  /**
   * A presented output: uploaded by `POST <oapi_base>/media/upload` (type `image` or `file`), then sent where the
   * answer went as `sampleImageMsg` / `sampleFile` with the `media_id` (upstream send_file). Another file type is
   * skipped with a warning before any call (DingTalk takes only its listed document types), so the next file still goes.
   * @throws PlatformError.
   */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const kind = uploadKind(file);
    if (!kind) return void this.deps.logger.warn({ provider: "dingtalk", file: file.filename }, "presented file not sent: DingTalk's robot takes only images and doc(x)/xls(x)/ppt(x)/pdf/zip/rar files");
    const upload = await this.withToken((token) => callPlatform("dingtalk", `${this.config.oapi_base.replace(/\/+$/, "")}/media/upload?access_token=${encodeURIComponent(token)}`, mediaForm(file, kind), judgeOapi, { policy: this.deps.retry, counter: this.deps.counter }));
    const mediaId = upload.body?.media_id;
    if (typeof mediaId !== "string" || !mediaId) throw new PlatformError("dingtalk", "other", "DingTalk gave no media_id for the uploaded file");
    await this.robotMessage(target, fileMessage(file, kind, mediaId));
  }

  /** Streams the card's whole `content` (an AI Card; `final` marks it finished). Only cards are edited. */
  async edit(_target: ReplyTarget, messageId: string, text: string, options: ReplyOptions = {}): Promise<void> {
    if (!this.config.card_template_id) throw new PlatformError("dingtalk", "other", "DingTalk robot messages cannot be edited");
    const body = { outTrackId: messageId, guid: randomUUID(), key: "content", content: adaptMarkdown(text), isFull: true, isFinalize: options.final === true, isError: false };
    await this.robot("v1.0/card/streaming", body, "PUT");
  }

  /** Creates and delivers an AI Card into the user's robot chat or the group, its `content` set (upstream AICardReplier). */
  private async createCard(target: ReplyTarget, text: string, final: boolean): Promise<string> {
    const outTrackId = randomUUID();
    const robotCode = this.config.client_id;
    const space = target.topicId
      ? { openSpaceId: `dtv1.card//IM_GROUP.${target.chatId}`, imGroupOpenSpaceModel: { supportForward: true }, imGroupOpenDeliverModel: { robotCode, atUserIds: {}, recipients: [] } }
      : { openSpaceId: `dtv1.card//IM_ROBOT.${target.chatId}`, imRobotOpenSpaceModel: { supportForward: true }, imRobotOpenDeliverModel: { spaceType: "IM_ROBOT", robotCode } };
    await this.robot("v1.0/card/instances/createAndDeliver", { cardTemplateId: this.config.card_template_id, outTrackId, callbackType: "STREAM", userIdType: 1, cardData: { cardParamMap: { content: adaptMarkdown(text) } }, ...space });
    // An answer complete at its first write is marked finished at once (no later edit will come for it).
    if (final) await this.edit(target, outTrackId, text, { final: true });
    return outTrackId;
  }
}
