// Discord: inbound messages over the Gateway (discord-gateway.ts), held by one gateway process at a time under a
// lease (as Telegram's long poll: another process takes over once the holder stops renewing it), replies over the
// REST API (create message, edit it while the answer streams) on plain fetch with a configurable `api_base`.
// A 429 waits the `retry_after` Discord gives (seconds, in the body; `Retry-After` header otherwise). Files both
// ways (discord-files.ts) and `thread_mode` (discord-threads.ts); a gateway closed for good marks the connections
// broken, a READY marks them connected again.
import type { Logger } from "pino";
import { callPlatform, downloadPlatformFile, retryAfterHeaderMs, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import { DiscordGateway } from "./discord-gateway.js";
import { attachmentUrl, attachmentsOf, DISCORD_MAX_UPLOAD_BYTES, fileMessageForm, type DiscordAttachment } from "./discord-files.js";
import { DiscordThreads } from "./discord-threads.js";
import { extractConnectCode } from "./commands.js";
import { LeaseHeldConnection, leaseNameFor } from "./lease-hold.js";
import type { LeaseStore } from "./store.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type ConnectionStatusSink, type InboundFile, type InboundMessage, type InboundSink, type OutboundFile, type ReplyTarget } from "./types.js";
import type { DiscordConfig } from "./config.js";

/** Discord's message length limit (characters, upstream `_DISCORD_MAX_MESSAGE_LEN`). */
export const DISCORD_MAX_CHARS = 2000;
/** Message edits share a per-channel bucket of about five per five seconds: one a second. */
export const DISCORD_EDIT_INTERVAL_MS = 1000;

/** What the Discord adapter needs besides its config section. */
export interface DiscordDeps {
  logger: Logger;
  lease: LeaseStore;
  /** This process's lease-holder id. */
  holderId: string;
  retry?: RetryPolicy;
  counter?: { calls: number };
  /** How long the gateway lease lasts without renewal, in ms (default 30 000; renewed every third of it). */
  leaseMs?: number;
  /**
   * Sets the status of every Discord connection (ChannelStore.setProviderStatus): `broken` once the gateway is
   * closed for good (a refused token), `connected` on READY, so Settings → Channels shows the bot's state.
   */
  setStatus?: ConnectionStatusSink;
}

/** Reads a REST answer: 2xx accepted; 429 waits `retry_after`; 5xx retried; 401 `auth` (token refused). */
function judge(answer: PlatformAnswer): Verdict {
  const body = answer.body ?? {};
  if (answer.status >= 200 && answer.status < 300) return { kind: "ok" };
  if (answer.status === 429) {
    const after = Number(body.retry_after);
    return { kind: "retry", afterMs: Number.isFinite(after) && after >= 0 ? Math.ceil(after * 1000) : (retryAfterHeaderMs(answer.headers) ?? 1000) };
  }
  if (answer.status >= 500) return { kind: "retry" };
  const detail = typeof body.message === "string" ? body.message : `HTTP ${answer.status}`;
  return { kind: "fail", error: new PlatformError("discord", answer.status === 401 ? "auth" : "other", `Discord refused the call: ${detail}`) };
}

/** The parts of a MESSAGE_CREATE read here. */
interface DiscordMessage {
  id?: string;
  channel_id?: string;
  guild_id?: string;
  content?: string;
  author?: { id?: string; username?: string; global_name?: string | null; bot?: boolean };
  mentions?: { id?: string }[];
  webhook_id?: string;
  attachments?: DiscordAttachment[];
}

/** The Discord adapter (upstream discord.py, on the documented Gateway and REST API). */
export class DiscordAdapter implements ChannelAdapter {
  readonly provider = "discord";
  readonly capabilities: AdapterCapabilities;
  readonly gateway: DiscordGateway;
  private sink: InboundSink | null = null;
  private botUserId: string | null = null;
  private readonly held: LeaseHeldConnection;
  /** Upstream: `thread_mode` defaults to `mention_only`. */
  private readonly threadMode: boolean;
  readonly threads: DiscordThreads;
  /** Inbound dispatches in order (a thread-mode lookup is async; a later message never overtakes it). */
  private inbound: Promise<void> = Promise.resolve();
  readonly maxUploadBytes = DISCORD_MAX_UPLOAD_BYTES;

  constructor(private readonly config: DiscordConfig, private readonly deps: DiscordDeps) {
    this.capabilities = { editMessages: true, maxMessageChars: DISCORD_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? DISCORD_EDIT_INTERVAL_MS };
    // One gateway connection per bot, whatever process: the lease is named by a hash of the token.
    const lease = { lease: deps.lease, name: leaseNameFor("discord-gateway", config.bot_token), holderId: deps.holderId, leaseMs: deps.leaseMs ?? 30_000 };
    this.held = new LeaseHeldConnection(lease, (held) => this.gateway.run(held), async (err) => {
      // A refused token or a disallowed intent: reconnecting cannot help; say so once, show it in Settings.
      this.deps.logger.error({ provider: "discord", err: err.message }, "discord gateway closed for good; the channel stops receiving");
      await this.deps.setStatus?.("broken");
    });
    this.threadMode = config.thread_mode ?? config.mention_only;
    this.threads = new DiscordThreads((method, path, body, accept) => this.call(method, path, body, accept), deps.logger);
    this.gateway = new DiscordGateway({
      token: config.bot_token, logger: deps.logger, gatewayUrl: () => this.gatewayUrl(),
      onDispatch: (event, data) => this.onDispatch(event, data),
    });
  }

  private call(method: "POST" | "PATCH" | "GET", path: string, body: unknown, accept?: (answer: PlatformAnswer) => boolean): Promise<PlatformAnswer> {
    const url = `${this.config.api_base.replace(/\/+$/, "")}/${path}`;
    const verdict = accept ? (a: PlatformAnswer): Verdict => (accept(a) ? { kind: "ok" } : judge(a)) : judge;
    return callPlatform("discord", url, body, verdict, { method, headers: { authorization: `Bot ${this.config.bot_token}` }, policy: this.deps.retry, counter: this.deps.counter });
  }

  /** `gateway_url`, or the URL `GET /gateway/bot` gives (Discord's documented way to find it). */
  private async gatewayUrl(): Promise<string> {
    if (this.config.gateway_url) return this.config.gateway_url;
    const answer = await this.call("GET", "gateway/bot", undefined);
    const url = answer.body?.url;
    if (typeof url !== "string" || !url) throw new PlatformError("discord", "other", "Discord's /gateway/bot answer has no url");
    return url;
  }

  /** False once Discord closed the gateway for good (a refused token): the channel no longer receives. */
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

  private onDispatch(event: string, data: Record<string, any>): void {
    if (event === "READY") {
      this.botUserId = typeof data.user?.id === "string" ? data.user.id : null;
      void this.deps.setStatus?.("connected");
    }
    // Thread mode learns the server's threads from the Gateway as it goes (fewer channel lookups).
    if (event === "THREAD_CREATE" || event === "THREAD_UPDATE" || event === "CHANNEL_CREATE") this.threads.learn(data);
    const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
    if (event === "GUILD_CREATE") for (const c of [...list(data.channels), ...list(data.threads)]) this.threads.learn(c as Record<string, any>);
    if (event !== "MESSAGE_CREATE") return;
    this.inbound = this.inbound.then(() => this.accept(data as DiscordMessage));
  }

  private async accept(data: DiscordMessage): Promise<void> {
    try {
      const message = await this.toInbound(data);
      if (message && this.sink) await this.sink(message);
    } catch (err) {
      this.deps.logger.warn({ provider: "discord", err: (err as Error).message }, "discord message not queued");
    }
  }

  private async toInbound(m: DiscordMessage): Promise<InboundMessage | null> {
    const author = m.author;
    if (!m.id || !m.channel_id || !author?.id || author.bot || m.webhook_id || author.id === this.botUserId) return null;
    const bot = this.botUserId;
    let mentioned = !m.guild_id || (bot !== null && (m.mentions ?? []).some((u) => u.id === bot));
    const text = bot ? (m.content ?? "").replace(new RegExp(`<@!?${bot}>`, "g"), "").trim() : (m.content ?? "").trim();
    let route = { chatId: m.channel_id, topicId: null as string | null, replyToId: m.guild_id ? m.id : null };
    if (m.guild_id && this.threadMode) {
      // `/connect` is answered in place (upstream replies in the channel before any thread routing).
      const routed = await this.threads.route({ id: m.id, channelId: m.channel_id, inPlace: extractConnectCode(text) !== null }, bot);
      const { inBotThread, ...where } = routed;
      mentioned ||= inBotThread;
      route = where;
    }
    return {
      provider: "discord", eventId: m.id, userId: author.id, userName: author.global_name ?? author.username ?? null, workspaceId: null,
      guildId: m.guild_id ?? null, ...route, text, isDirect: !m.guild_id, mentioned, receivedAt: Date.now(), files: attachmentsOf(m.attachments),
    };
  }

  /** Upstream's thread name: `deerflow-<display name>-<message id>` (the target is the inbound message). */
  private threadName(target: ReplyTarget): string {
    const name = (target as Partial<InboundMessage>).userName;
    return `deerflow-${name ? `${name}-` : ""}${target.replyToId ?? target.topicId ?? ""}`;
  }

  /** Posts a message (into the conversation's thread in thread mode; else a reply to the user's message in a server). */
  async send(target: ReplyTarget, text: string): Promise<string> {
    const dest = await this.threads.destination(target, this.threadName(target));
    const body: Record<string, unknown> = { content: text, allowed_mentions: { parse: [] } };
    if (dest.reference) body.message_reference = { message_id: dest.reference, fail_if_not_exists: false };
    const answer = await this.call("POST", `channels/${encodeURIComponent(dest.channelId)}/messages`, body);
    return String(answer.body?.id ?? "");
  }

  async edit(target: ReplyTarget, messageId: string, text: string): Promise<void> {
    const dest = await this.threads.destination(target, this.threadName(target));
    await this.call("PATCH", `channels/${encodeURIComponent(dest.channelId)}/messages/${encodeURIComponent(messageId)}`, { content: text });
  }

  /** Downloads an attachment from Discord's CDN (or the `api_base` origin); no token goes with it. */
  async downloadFile(file: InboundFile, maxBytes: number): Promise<Buffer> {
    return downloadPlatformFile("discord", attachmentUrl(file.ref, this.config.api_base), file.filename, maxBytes, { counter: this.deps.counter });
  }

  /** Posts a presented file as a multipart create-message (`payload_json` + `files[0]`) where the answer went. */
  async sendFile(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const dest = await this.threads.destination(target, this.threadName(target));
    await this.call("POST", `channels/${encodeURIComponent(dest.channelId)}/messages`, fileMessageForm(file, dest.reference));
  }
}
