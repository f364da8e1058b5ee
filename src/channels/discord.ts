// Discord: inbound messages over the Gateway (discord-gateway.ts), held by one gateway process at a time under a
// lease (as Telegram's long poll: another process takes over once the holder stops renewing it), replies over the
// REST API (create message, edit it while the answer streams) on plain fetch with a configurable `api_base`.
// A 429 waits the `retry_after` Discord gives (seconds, in the body; `Retry-After` header otherwise).
import type { Logger } from "pino";
import { callPlatform, retryAfterHeaderMs, type PlatformAnswer, type RetryPolicy, type Verdict } from "./platform-http.js";
import { DiscordGateway } from "./discord-gateway.js";
import { holdUnderLease, leaseNameFor } from "./lease-hold.js";
import type { LeaseStore } from "./store.js";
import { PlatformError, type AdapterCapabilities, type ChannelAdapter, type InboundMessage, type InboundSink, type ReplyTarget } from "./types.js";
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
}

/** The Discord adapter (upstream discord.py, on the documented Gateway and REST API). */
export class DiscordAdapter implements ChannelAdapter {
  readonly provider = "discord";
  readonly capabilities: AdapterCapabilities;
  readonly gateway: DiscordGateway;
  private sink: InboundSink | null = null;
  private botUserId: string | null = null;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly leaseName: string;
  private closedForGood = false;

  constructor(private readonly config: DiscordConfig, private readonly deps: DiscordDeps) {
    this.capabilities = { editMessages: true, maxMessageChars: DISCORD_MAX_CHARS, minEditIntervalMs: config.stream_edit_interval_ms ?? DISCORD_EDIT_INTERVAL_MS };
    // One gateway connection per bot, whatever process: the lease is named by a hash of the token.
    this.leaseName = leaseNameFor("discord-gateway", config.bot_token);
    this.gateway = new DiscordGateway({
      token: config.bot_token, logger: deps.logger, gatewayUrl: () => this.gatewayUrl(),
      onDispatch: (event, data) => this.onDispatch(event, data),
    });
  }

  private call(method: "POST" | "PATCH" | "GET", path: string, body: unknown): Promise<PlatformAnswer> {
    const url = `${this.config.api_base.replace(/\/+$/, "")}/${path}`;
    return callPlatform("discord", url, body, judge, { method, headers: { authorization: `Bot ${this.config.bot_token}` }, policy: this.deps.retry, counter: this.deps.counter });
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
    return !this.closedForGood;
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.loop = this.holdLoop();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop?.catch(() => undefined);
    await this.deps.lease.releaseLease(this.leaseName, this.deps.holderId).catch(() => undefined);
    this.sink = null;
  }

  /** Takes the lease when free, holds the gateway while renewing it, lets go when a renewal fails. */
  private async holdLoop(): Promise<void> {
    const opts = { lease: this.deps.lease, name: this.leaseName, holderId: this.deps.holderId, leaseMs: this.deps.leaseMs ?? 30_000, signal: this.stopping.signal };
    try {
      await holdUnderLease(opts, (held) => this.gateway.run(held));
    } catch (err) {
      // A refused token or a disallowed intent: reconnecting cannot help; say so once and stop.
      this.deps.logger.error({ provider: "discord", err: (err as Error).message }, "discord gateway closed for good; the channel stops receiving");
      this.closedForGood = true;
    }
  }

  private onDispatch(event: string, data: Record<string, any>): void {
    if (event === "READY") this.botUserId = typeof data.user?.id === "string" ? data.user.id : null;
    if (event !== "MESSAGE_CREATE") return;
    const message = this.toInbound(data as DiscordMessage);
    if (message && this.sink) {
      this.sink(message).catch((err) => this.deps.logger.warn({ provider: "discord", err: (err as Error).message }, "discord message not queued"));
    }
  }

  private toInbound(m: DiscordMessage): InboundMessage | null {
    const author = m.author;
    if (!m.id || !m.channel_id || !author?.id || author.bot || m.webhook_id || author.id === this.botUserId) return null;
    const bot = this.botUserId;
    const mentioned = !m.guild_id || (bot !== null && (m.mentions ?? []).some((u) => u.id === bot));
    const text = bot ? (m.content ?? "").replace(new RegExp(`<@!?${bot}>`, "g"), "").trim() : (m.content ?? "").trim();
    return {
      provider: "discord", eventId: m.id, userId: author.id, userName: author.global_name ?? author.username ?? null, workspaceId: null,
      guildId: m.guild_id ?? null, chatId: m.channel_id, topicId: null, replyToId: m.guild_id ? m.id : null,
      text, isDirect: !m.guild_id, mentioned, receivedAt: Date.now(),
    };
  }

  /** Posts a message into the channel (a reply to the user's message in a server), mentions disabled. */
  async send(target: ReplyTarget, text: string): Promise<string> {
    const body: Record<string, unknown> = { content: text, allowed_mentions: { parse: [] } };
    if (target.replyToId) body.message_reference = { message_id: target.replyToId, fail_if_not_exists: false };
    const answer = await this.call("POST", `channels/${encodeURIComponent(target.chatId)}/messages`, body);
    return String(answer.body?.id ?? "");
  }

  async edit(target: ReplyTarget, messageId: string, text: string): Promise<void> {
    await this.call("PATCH", `channels/${encodeURIComponent(target.chatId)}/messages/${encodeURIComponent(messageId)}`, { content: text });
  }
}
