// Discord's `thread_mode` (upstream discord.py): a server-channel message starts a Discord thread from itself
// (`POST /channels/{channel}/messages/{message}/threads`; the thread takes the message's id), the answer goes into
// that thread, and later messages in the thread continue the same gateway thread. A conversation is keyed by the
// parent channel (`chatId`) and the Discord thread (`topicId`), so the manager's thread map needs nothing new.
// The thread is started lazily, on the first reply, so a duplicate or filtered delivery never starts one.
import type { Logger } from "pino";
import type { PlatformAnswer } from "./platform-http.js";
import { PlatformError, type ReplyTarget } from "./types.js";

/** Channel types a thread can start in: GUILD_TEXT and GUILD_ANNOUNCEMENT (upstream checks the same two). */
const THREADABLE = new Set([0, 5]);
/** ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD. */
const THREAD_TYPES = new Set([10, 11, 12]);
/** Discord's error code for "a thread has already been created for this message". */
const THREAD_EXISTS = 160004;
/** Channels and thread starts remembered per process (oldest forgotten first; a lookup fetches again). */
const MAX_REMEMBERED = 10_000;
/** Discord's longest thread name (characters). */
const MAX_THREAD_NAME = 100;

/** What the adapter knows of a channel (GET /channels/{id}, THREAD_CREATE, GUILD_CREATE). */
export interface ChannelInfo {
  type: number;
  parentId: string | null;
  /** A thread's creator (the bot for the threads it started). */
  ownerId: string | null;
}

/** Where a server message's replies go, and whether it continues one of the bot's threads. */
export interface ThreadRoute {
  chatId: string;
  topicId: string | null;
  replyToId: string | null;
  /** True in a thread the bot started: upstream accepts those messages without a mention (a continuation). */
  inBotThread: boolean;
}

/** A REST call of the adapter; `accept` marks a non-2xx answer as accepted (Discord's "already exists"). */
export type DiscordCall = (method: "POST" | "GET", path: string, body: unknown, accept?: (answer: PlatformAnswer) => boolean) => Promise<PlatformAnswer>;

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value as string);
}

/** Thread routing for one bot: a channel cache and the threads started (or refused) by this process. */
export class DiscordThreads {
  private readonly channels = new Map<string, ChannelInfo>();
  /** Thread starts by source message id: resolves true once the thread exists, false when Discord refused it. */
  private readonly starts = new Map<string, Promise<boolean>>();

  constructor(private readonly call: DiscordCall, private readonly logger: Logger) {}

  /** Records a Discord channel object (a THREAD_CREATE's data, a GUILD_CREATE's `channels` / `threads` entry). */
  learn(channel: Record<string, any> | null | undefined): void {
    if (typeof channel?.id !== "string" || typeof channel.type !== "number") return;
    remember(this.channels, channel.id, {
      type: channel.type,
      parentId: typeof channel.parent_id === "string" ? channel.parent_id : null,
      ownerId: typeof channel.owner_id === "string" ? channel.owner_id : null,
    });
  }

  /** The channel's info, fetched once (GET /channels/{id}); null when Discord did not say. @throws PlatformError `auth`. */
  private async info(channelId: string): Promise<ChannelInfo | null> {
    const known = this.channels.get(channelId);
    if (known) return known;
    try {
      this.learn((await this.call("GET", `channels/${encodeURIComponent(channelId)}`, undefined)).body);
    } catch (err) {
      if (err instanceof PlatformError && err.kind === "auth") throw err;
      this.logger.warn({ provider: "discord", err: (err as Error).message }, "discord channel lookup failed; treating it as a text channel");
    }
    return this.channels.get(channelId) ?? null;
  }

  /**
   * Routes a server message (upstream `_handle_admitted_message`): in one of the bot's threads, the parent channel
   * and that thread; in a text or announcement channel, a thread to start from the message (`topicId` = its id,
   * the id Discord gives the thread); elsewhere (another's thread, a voice chat, `/connect`), a reply in place.
   */
  async route(message: { id: string; channelId: string; inPlace: boolean }, botUserId: string | null): Promise<ThreadRoute> {
    const inPlace: ThreadRoute = { chatId: message.channelId, topicId: null, replyToId: message.id, inBotThread: false };
    const info = await this.info(message.channelId);
    if (info && THREAD_TYPES.has(info.type)) {
      const mine = info.parentId !== null && botUserId !== null && info.ownerId === botUserId;
      return mine ? { chatId: info.parentId as string, topicId: message.channelId, replyToId: null, inBotThread: true } : inPlace;
    }
    if (message.inPlace || (info && !THREADABLE.has(info.type))) return inPlace;
    return { chatId: message.channelId, topicId: message.id, replyToId: message.id, inBotThread: false };
  }

  /**
   * The channel a reply to `target` is posted in, and the message it references. A target whose `topicId` is its
   * `replyToId` asks for a thread started from that message: started here on first use (once per message); when
   * Discord refuses (threads off, missing permission), the reply goes into the channel as upstream falls back.
   * @throws PlatformError `auth` (token refused).
   */
  async destination(target: ReplyTarget, name: string): Promise<{ channelId: string; reference: string | null }> {
    if (!target.topicId) return { channelId: target.chatId, reference: target.replyToId ?? null };
    if (target.topicId !== target.replyToId) return { channelId: target.topicId, reference: null };
    let started = this.starts.get(target.topicId);
    if (!started) {
      started = this.start(target.chatId, target.topicId, name);
      remember(this.starts, target.topicId, started);
    }
    return (await started) ? { channelId: target.topicId, reference: null } : { channelId: target.chatId, reference: target.replyToId };
  }

  private async start(channelId: string, messageId: string, name: string): Promise<boolean> {
    const path = `channels/${encodeURIComponent(channelId)}/messages/${encodeURIComponent(messageId)}/threads`;
    try {
      // 1440: a day without messages archives the thread (Discord's default for the client's threads).
      const answer = await this.call("POST", path, { name: name.slice(0, MAX_THREAD_NAME), auto_archive_duration: 1440 }, (a) => a.status === 400 && a.body?.code === THREAD_EXISTS);
      if (answer.status < 300) this.learn(answer.body);
      return true;
    } catch (err) {
      if (err instanceof PlatformError && err.kind === "auth") {
        this.starts.delete(messageId);
        throw err;
      }
      this.logger.info({ provider: "discord", channel_id: channelId, err: (err as Error).message }, "discord thread not started; replying in the channel");
      return false;
    }
  }
}
