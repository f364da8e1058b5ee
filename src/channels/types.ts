// The seam between IM platforms and the gateway (DeerFlow app/channels/base.py + message_bus.py, ported): a
// platform adapter turns the platform's events into InboundMessages for the manager and carries replies back
// (send, then edit in place where the platform allows it). Adapters know nothing of threads, runs or users.

/** Where a reply goes: the platform conversation an inbound message came from. */
export interface ReplyTarget {
  /** The platform's chat / channel / DM id (Telegram `chat.id`, Slack `channel`). */
  chatId: string;
  /** A sub-conversation inside the chat (Slack `thread_ts`, Telegram forum topic), when there is one. */
  topicId?: string | null;
  /** The platform id of the message being answered, where replies attach to it (Feishu reply, Discord reference). */
  replyToId?: string | null;
}

/** One platform event that carries a user message (DeerFlow `InboundMessage`). */
export interface InboundMessage extends ReplyTarget {
  /** Adapter name: `telegram`, `slack`, ... (DeerFlow `channel_name`). */
  provider: string;
  /**
   * The platform's id of this delivery (Telegram `update_id`, Slack `event_id`): the dedupe key. The same event
   * delivered again (webhook retry, a second process's long poll) carries the same id.
   */
  eventId: string;
  /** The sender's platform id (Telegram `from.id`, Slack `user`): what a connection binds. */
  userId: string;
  /** The sender's display name, when the platform gives one. */
  userName?: string | null;
  /** The workspace / team the sender belongs to (Slack `team_id`); null where the platform has none. */
  workspaceId?: string | null;
  /** The server the message was posted in (Discord `guild_id`) for `allowed_guilds`; not part of the identity. */
  guildId?: string | null;
  /** The message text as the user wrote it (mentions of the bot already stripped by the adapter). */
  text: string;
  /** True for a one-to-one conversation with the bot (Telegram private chat, Slack `im`). */
  isDirect: boolean;
  /** True when the bot was mentioned (always true in a DM); `mention_only` channels need it. */
  mentioned: boolean;
  /** When the adapter received it (ms since epoch): the start of the inbound-to-first-reply latency. */
  receivedAt: number;
  /** Files attached to the message (Telegram `document` / `photo`, Slack `files`), not yet downloaded. */
  files?: InboundFile[];
}

/**
 * A file the user sent, as the platform describes it before download (upstream `InboundMessage.files` entries).
 * `ref` is what the adapter's `downloadFile` needs (Telegram `file_id`, Slack `url_private_download`).
 */
export interface InboundFile {
  ref: string;
  /** The name to store it under (the platform's file name, or `telegram-photo-<message id>.jpg` and the like). */
  filename: string;
  /** The size the platform declares, in bytes; null when it gives none. Checked before anything is downloaded. */
  size: number | null;
  /** `image` for photos / image mime types, else `file` (upstream `type`). */
  kind: "image" | "file";
}

/** A file to post into the chat: a presented artifact of the agent's outputs. */
export interface OutboundFile {
  filename: string;
  data: Buffer;
  /** Its content type (`application/pdf`, ...). */
  contentType: string;
}

/** What an adapter can do with its replies; the reply streamer throttles and splits by it. */
export interface AdapterCapabilities {
  /** True when a sent message can be edited (Telegram `editMessageText`, Slack `chat.update`). */
  editMessages: boolean;
  /** The longest text one message may carry (Telegram 4096, Slack 40000 characters). */
  maxMessageChars: number;
  /** The shortest interval between two edits of one message, in ms (the platform's rate limit). */
  minEditIntervalMs: number;
  /**
   * True when the end's write must edit each posted message even unchanged, with `final: true`: a DingTalk AI Card is
   * marked finished, a WeCom `stream` reply ends with `finish: true`.
   */
  finalizeEdits?: boolean;
}

/** What a `send` / `edit` is part of: `stream` for a run's streamed answer (not a one-off reply), `final` on its last write. */
export interface ReplyOptions {
  stream?: boolean;
  final?: boolean;
}

/**
 * Sets every connection of the adapter's provider to `status` (Settings → Channels shows it): `broken` when the
 * platform refuses the bot's credentials for good, `connected` once it accepts them again. Never throws.
 */
export type ConnectionStatusSink = (status: "broken" | "connected") => Promise<void>;

/** What a webhook request carries, as the route received it (the raw body: signatures are over its bytes). */
export interface WebhookRequest {
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
}

/** The answer a webhook gets: status and JSON body. Work the event starts continues after it was sent. */
export interface WebhookAnswer {
  status: number;
  body: unknown;
}

/** Where an adapter hands its inbound messages (the message bus). Resolves once the message is queued. */
export type InboundSink = (message: InboundMessage) => Promise<void>;

/**
 * A platform adapter (DeerFlow `Channel`). Lifecycle: `start(sink)` once (a polling adapter starts its loop, holding
 * the poll lease), `stop()` once. Replies: `send` posts a new message and resolves its platform id; `edit`
 * replaces a sent message's text. Both retry the platform's 429 / 5xx answers within their limits and throw
 * {@link PlatformError} when the platform refuses for good (`auth` when the bot token was revoked).
 */
export interface ChannelAdapter {
  readonly provider: string;
  readonly capabilities: AdapterCapabilities;
  start(sink: InboundSink): Promise<void>;
  stop(): Promise<void>;
  send(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<string>;
  edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void>;
  /**
   * Downloads a file the user sent, reading at most `maxBytes` (more: {@link FileTooLargeError}, nothing kept).
   * Absent on adapters that take no files.
   */
  downloadFile?(file: InboundFile, maxBytes: number): Promise<Buffer>;
  /** Posts a file into the conversation (Telegram `sendDocument`, Slack's external upload). Absent: no file replies. */
  sendFile?(target: ReplyTarget, file: OutboundFile): Promise<void>;
  /** The largest file `sendFile` may post, in bytes (Telegram's 50 MB bot upload limit, ...). */
  readonly maxUploadBytes?: number;
  /**
   * Answers a webhook delivery: verifies its signature (401 when bad or missing, nothing queued), queues the
   * messages it carries through the sink, answers at once. Absent on adapters without a webhook mode.
   */
  handleWebhook?(request: WebhookRequest): Promise<WebhookAnswer>;
}

/** Why a platform call failed for good: `auth` (token revoked / invalid), `rate_limited` (retries spent), `other`. */
export class PlatformError extends Error {
  constructor(
    readonly provider: string,
    readonly kind: "auth" | "rate_limited" | "other",
    message: string,
  ) {
    super(message);
    this.name = "PlatformError";
  }
}

/** A user's file is larger than the channel accepts (declared or while downloading). `limit` in bytes. */
export class FileTooLargeError extends Error {
  constructor(readonly filename: string, readonly limit: number) {
    super(`File too large: ${filename} (limit ${limit} bytes)`);
    this.name = "FileTooLargeError";
  }
}
