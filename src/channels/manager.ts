// The channel manager (DeerFlow app/channels/manager.py, ported): takes each inbound message off the bus once
// (the dedupe store), applies the allow-lists and mention rule, binds connect codes, refuses unbound identities
// with upstream's answer, answers chat commands, and starts chat messages as runs through the same RunService as
// HTTP runs, on the gateway thread its conversation maps to, as the connected user. Replies stream back by edits.
import type { Logger } from "pino";
import { ConflictError, DeerflowError, RateLimitedError } from "../errors.js";
import { newId } from "../runtime/ids.js";
import type { RunRepository, ThreadRepository } from "../runtime/persistence/repositories.js";
import type { ActiveRun, RunManager } from "../runtime/runs/run-manager.js";
import type { RunService } from "../runtime/runs/run-service.js";
import type { StreamBridge } from "../runtime/stream/stream-bridge.js";
import { HELP_TEXT, extractConnectCode, parseCommand, unknownCommandReply } from "./commands.js";
import { PROVIDERS, type ChannelSettings, type PlatformName, type PlatformSection } from "./config.js";
import { ReplyStreamer } from "./reply-stream.js";
import type { ChannelConnection, ChannelStore, DedupeStore } from "./store.js";
import { PlatformError, type ChannelAdapter, type InboundMessage } from "./types.js";
import { runOutcome, type RunOutcome } from "./final-answer.js";
import type { GatewaySandboxProvider } from "../sandbox/security.js";
import type { UploadsConfig } from "./files.js";
import { PayloadTooLargeError, ValidationError } from "../errors.js";
import { CHANNEL_FILE_LIMIT_BYTES, createdFilesText, declaredTooLarge, fileRefusal, inboundFileLimit, ingestFiles, readPresentedFile, type MessageFile } from "./files.js";
import { FileTooLargeError, type ReplyTarget } from "./types.js";

/** How long a clarification question waits for its answer (upstream feishu PENDING_CLARIFICATION_TTL_SECONDS). */
export const PENDING_CLARIFICATION_TTL_MS = 30 * 60 * 1000;

/** Upstream's answer to a message from an identity no gateway user has connected. */
export const BOUND_IDENTITY_REQUIRED_MESSAGE = "Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.";
/** Upstream's answer while the conversation's previous run is still going (run policy: one run per conversation). */
export const THREAD_BUSY_MESSAGE = "This conversation is already processing another request. Please wait for it to finish and try again.";

/** What the manager works with (the app's services, passed in). */
export interface ManagerDeps {
  runService: RunService;
  runs: RunManager;
  threads: ThreadRepository;
  /** The run table (`/stop` finds the conversation's in-flight run there, whichever process runs it). */
  runRecords: RunRepository;
  bridge: StreamBridge;
  store: ChannelStore;
  dedupe: DedupeStore;
  settings: () => ChannelSettings;
  /** Model names of config.yaml (`/models`, `/model`). */
  modelNames: () => string[];
  /** With auth disabled every message runs as this user, bound or not (upstream's auth-disabled mode). */
  authDisabledUser: string | null;
  logger: Logger;
  /** Thread directories: a user's files are stored there as uploads, presented outputs are read from there. */
  sandbox: GatewaySandboxProvider;
  /** The `uploads` limits now (the same the upload route applies). */
  uploads: () => UploadsConfig;
  /** Called with each run's inbound-to-first-reply latency in ms (metrics, benchmarks). */
  onFirstReply?: (ms: number, provider: string) => void;
}

/** Who a message runs as: the connection (null with auth disabled and no binding) and the owner. */
interface Identity {
  connection: ChannelConnection | null;
  ownerId: string;
}

/** The channel manager: one per gateway process. */
export class ChannelManager {
  /** Reply streams in progress, so shutdown can wait for them. */
  private readonly replies = new Set<Promise<void>>();

  constructor(private readonly deps: ManagerDeps, private readonly adapters: ReadonlyMap<string, ChannelAdapter>) {}

  /** Handles one inbound message (the bus's handler). Never throws for the platform's input: answers in the chat. */
  async handle(msg: InboundMessage): Promise<void> {
    const adapter = this.adapters.get(msg.provider);
    if (!adapter || !this.allowed(msg)) return;
    const key = `${msg.provider}:${msg.workspaceId ?? ""}:${msg.eventId}`;
    if (!(await this.deps.dedupe.tryRecord(key, this.deps.settings().dedupe.ttl_seconds * 1000))) {
      this.deps.logger.debug({ provider: msg.provider, event_id: msg.eventId }, "duplicate channel event ignored");
      return;
    }
    try {
      await this.dispatch(msg, adapter);
    } catch (err) {
      // A transient failure: forget the event so the platform's redelivery can try again (upstream).
      await this.deps.dedupe.release(key).catch(() => undefined);
      this.deps.logger.error({ provider: msg.provider, err: (err as Error).message }, "channel message failed");
      await this.reply(adapter, msg, "An internal error occurred. Please try again.");
    }
  }

  /** Allow-lists (users, chats) and the mention rule; a message they exclude is ignored without an answer. */
  private allowed(msg: InboundMessage): boolean {
    const section = this.deps.settings().channels[msg.provider as PlatformName] as PlatformSection | undefined;
    if (!section) return false;
    if (section.allowed_users.length && !section.allowed_users.includes(msg.userId)) return false;
    // Discord's allowed_guilds (upstream): a DM has no guild and is refused once the list is set.
    if (section.allowed_guilds?.length && !(msg.guildId && section.allowed_guilds.includes(msg.guildId))) return false;
    // Discord's allowed_channels exempt a channel from mention_only (upstream); elsewhere they restrict to the list.
    if (msg.provider === "discord") return !(section.mention_only && !msg.isDirect && !msg.mentioned && !section.allowed_channels.includes(msg.chatId));
    if (section.allowed_channels.length && !msg.isDirect && !section.allowed_channels.includes(msg.chatId)) return false;
    return !(section.mention_only && !msg.isDirect && !msg.mentioned);
  }

  private async dispatch(msg: InboundMessage, adapter: ChannelAdapter): Promise<void> {
    const code = extractConnectCode(msg.text);
    if (code !== null && this.deps.settings().connections.enabled) return this.bind(msg, adapter, code);
    const identity = await this.identify(msg);
    if (!identity) return this.reply(adapter, msg, BOUND_IDENTITY_REQUIRED_MESSAGE);
    const command = parseCommand(msg.text);
    if (command) return this.reply(adapter, msg, await this.command(msg, identity, command.name, command.arg));
    const limit = this.deps.settings().channels.max_message_chars;
    if (msg.text.length > limit) return this.reply(adapter, msg, `Your message is too long (${msg.text.length} characters; the limit is ${limit}). Please shorten it and send it again.`);
    if (!msg.text.trim() && !msg.files?.length) return;
    await this.chat(msg, adapter, identity);
  }

  /** Spends a connect code: binds the sender to the code's owner (upstream's in-channel connect step). */
  private async bind(msg: InboundMessage, adapter: ChannelAdapter, code: string): Promise<void> {
    const name = PROVIDERS[msg.provider]?.display_name ?? msg.provider;
    const connection = await this.deps.store.redeemConnectCode(msg.provider, code, { externalAccountId: msg.userId, name: msg.userName ?? null, workspaceId: msg.workspaceId ?? null });
    await this.reply(adapter, msg, connection ? `${name} connected to DeerFlow.` : `${name} connection code is invalid or expired.`);
  }

  /** The sender's connection and owner, or null when the sender must connect first. */
  private async identify(msg: InboundMessage): Promise<Identity | null> {
    const { connections } = this.deps.settings();
    const connection = connections.enabled ? await this.deps.store.findByIdentity(msg.provider, msg.userId, msg.workspaceId ?? null) : null;
    if (connection) return { connection, ownerId: connection.owner_user_id };
    if (this.deps.authDisabledUser) return { connection: null, ownerId: this.deps.authDisabledUser };
    // Upstream's legacy open-bot mode (require_bound_identity: false) has no owner to run as when auth is on.
    return null;
  }

  /** Where a conversation's thread id is kept: per connection, or per platform chat with auth disabled. */
  private mapKey(msg: InboundMessage, identity: Identity): string {
    return identity.connection?.id ?? `${msg.provider}:unbound:${msg.userId}`;
  }

  private async command(msg: InboundMessage, identity: Identity, name: string, arg: string): Promise<string> {
    const threadId = await this.deps.store.getThreadId(this.mapKey(msg, identity), msg.chatId, msg.topicId);
    const settings = identity.connection?.metadata ?? {};
    switch (name) {
      case "new":
        await this.deps.store.setThreadId(this.mapKey(msg, identity), msg.chatId, msg.topicId, null);
        await this.deps.store.takePendingClarification(clarificationKey(msg));
        return "New conversation started.";
      case "stop":
        return (await this.stop(threadId)) ? "Stopped." : "Nothing is running.";
      case "status":
        return threadId ? `Active thread: ${threadId}` : "No active conversation.";
      case "models":
        return `Available models: ${this.deps.modelNames().join(", ")}${settings.model_name ? `\nIn use: ${String(settings.model_name)}` : ""}`;
      case "model":
      case "agent":
        return this.switchSetting(identity, name, arg);
      case "help":
        return HELP_TEXT;
      default:
        return unknownCommandReply(name);
    }
  }

  /** `/model <name>` and `/agent <name>`: per-user runtime settings on the connection (`default` clears). */
  private async switchSetting(identity: Identity, name: "model" | "agent", arg: string): Promise<string> {
    if (!identity.connection) return "Connect this channel from DeerFlow Settings to keep settings.";
    if (!arg) return `Usage: /${name} <name> (or /${name} default)`;
    if (name === "model" && arg !== "default" && !this.deps.modelNames().includes(arg)) return `Unknown model: ${arg}. Available models: ${this.deps.modelNames().join(", ")}`;
    if (name === "agent" && arg !== "default" && !/^[A-Za-z0-9-]{1,64}$/.test(arg)) return `Invalid agent name: ${arg}`;
    await this.deps.store.patchSettings(identity.connection.id, { [`${name}_name`]: arg === "default" ? null : arg });
    return arg === "default" ? `Using the default ${name}.` : `Using ${name} ${arg}.`;
  }

  /** Interrupts the thread's in-flight run(s); true when one was stopped. */
  private async stop(threadId: string | null): Promise<boolean> {
    if (!threadId) return false;
    const recent = await this.deps.runRecords.list(threadId, { limit: 10 });
    const inFlight = recent.filter((r) => r.status === "pending" || r.status === "running").map((r) => r.run_id);
    for (const runId of inFlight) await this.deps.runs.cancel(threadId, runId, { action: "interrupt" }).catch(() => undefined);
    return inFlight.length > 0;
  }

  /** The conversation's thread, created (owned by the connected user) on its first message or after `/new`. */
  private async threadFor(msg: InboundMessage, identity: Identity): Promise<string> {
    const key = this.mapKey(msg, identity);
    const known = await this.deps.store.getThreadId(key, msg.chatId, msg.topicId);
    if (known && (await this.deps.threads.getOwned(known, identity.ownerId))) return known;
    const threadId = newId();
    const channelSource: Record<string, unknown> = { type: "im_channel", provider: msg.provider, chat_id: msg.chatId };
    if (msg.topicId) channelSource.topic_id = msg.topicId;
    if (identity.connection) channelSource.connection_id = identity.connection.id;
    await this.deps.threads.create(threadId, { channel_source: channelSource }, identity.ownerId);
    await this.deps.store.setThreadId(key, msg.chatId, msg.topicId, threadId);
    return threadId;
  }

  /**
   * Starts the run (upstream run policy: a busy conversation gets THREAD_BUSY_MESSAGE) and streams its answer. A
   * message that answers an open clarification question runs on the question's thread and is answered where the
   * question was asked. A file over the limit (declared by the platform) is refused before anything is created.
   */
  private async chat(msg: InboundMessage, adapter: ChannelAdapter, identity: Identity): Promise<void> {
    const tooLarge = declaredTooLarge(msg.files ?? [], inboundFileLimit(this.deps.uploads()));
    if (tooLarge) return this.reply(adapter, msg, fileRefusal(tooLarge));
    const pending = await this.deps.store.takePendingClarification(clarificationKey(msg));
    const resumed = pending && (await this.deps.threads.getOwned(pending.threadId, identity.ownerId)) ? pending : null;
    const threadId = resumed?.threadId ?? (await this.threadFor(msg, identity));
    const target: ReplyTarget = resumed ? { chatId: msg.chatId, topicId: resumed.topicId } : msg;
    let files: MessageFile[] = [];
    try {
      files = await ingestFiles(adapter, msg.files ?? [], { provider: this.deps.sandbox, threadId, userId: identity.ownerId, uploads: this.deps.uploads() });
    } catch (err) {
      if (err instanceof FileTooLargeError || err instanceof PayloadTooLargeError || err instanceof ValidationError) return this.reply(adapter, { ...target, provider: msg.provider }, fileRefusal(err));
      throw err;
    }
    const run = await this.startRun(msg, adapter, identity, threadId, files);
    if (!run) return;
    const work = this.follow(msg, adapter, target, run, { threadId, ownerId: identity.ownerId }).catch((err) => this.replyFailed(msg, err));
    this.replies.add(work);
    void work.finally(() => this.replies.delete(work));
  }

  /** Starts the conversation's run with the user's text and stored files; null (answered in the chat) when refused. */
  private async startRun(msg: InboundMessage, adapter: ChannelAdapter, identity: Identity, threadId: string, files: MessageFile[]) {
    const { session } = this.deps.settings().channels;
    const settings = identity.connection?.metadata ?? {};
    const context: Record<string, unknown> = { ...session.context };
    if (typeof settings.model_name === "string") context.model_name = settings.model_name;
    if (typeof settings.agent_name === "string") context.agent_name = settings.agent_name;
    // The files ride on the message as the web app sends them (`additional_kwargs.files`): the uploads middleware
    // tells the agent about them, as upstream's channel manager does.
    const message: Record<string, unknown> = { role: "user", content: msg.text };
    if (files.length) message.additional_kwargs = { files };
    try {
      const started = await this.deps.runService.start(threadId, {
        assistant_id: session.assistant_id,
        input: { messages: [message] },
        context,
        metadata: { channel: msg.provider },
        stream_mode: ["messages-tuple"],
        on_disconnect: "continue",
        multitask_strategy: "reject",
      }, identity.ownerId);
      return started.run;
    } catch (err) {
      if (err instanceof ConflictError) await this.reply(adapter, msg, THREAD_BUSY_MESSAGE);
      else if (err instanceof RateLimitedError || err instanceof DeerflowError) await this.reply(adapter, msg, err.message);
      else throw err;
      return null;
    }
  }

  /**
   * Streams the run's answer into the chat, then posts the files it presented and remembers an open question
   * (so the user's next message in this chat answers it).
   */
  private async follow(msg: InboundMessage, adapter: ChannelAdapter, target: ReplyTarget, run: ActiveRun, where: { threadId: string; ownerId: string }): Promise<void> {
    let outcome: RunOutcome | null = null;
    const streamer = new ReplyStreamer(adapter, target);
    const result = await streamer.follow(this.deps.bridge, run.record.run_id, async (streamed) => {
      outcome = await runOutcome(this.deps.runService, run, streamed);
      // Upstream names the files under the answer, so they stay findable when an upload fails.
      return outcome.presented.length ? `${outcome.text}\n\n${createdFilesText(outcome.presented)}` : outcome.text;
    });
    if (result.firstReplyAt !== null) this.deps.onFirstReply?.(result.firstReplyAt - msg.receivedAt, msg.provider);
    const done = outcome as RunOutcome | null;
    if (!done) return;
    if (done.clarification) await this.deps.store.setPendingClarification(clarificationKey(msg), { threadId: where.threadId, topicId: target.topicId ?? null }, PENDING_CLARIFICATION_TTL_MS);
    if (!adapter.sendFile) return;
    const max = Math.min(adapter.maxUploadBytes ?? CHANNEL_FILE_LIMIT_BYTES, CHANNEL_FILE_LIMIT_BYTES);
    for (const virtualPath of done.presented) {
      const file = await readPresentedFile(this.deps.sandbox, where.threadId, where.ownerId, virtualPath, max);
      if (file) await adapter.sendFile(target, file);
      else this.deps.logger.warn({ provider: msg.provider, path: virtualPath }, "presented file not sent: missing, refused or over the platform's limit");
    }
  }

  /** A reply that could not be delivered: a refused token marks the provider's connections broken (Settings shows it). */
  private async replyFailed(msg: { provider: string }, err: unknown): Promise<void> {
    this.deps.logger.warn({ provider: msg.provider, err: (err as Error).message }, "channel reply failed");
    if (err instanceof PlatformError && err.kind === "auth") await this.deps.store.setProviderStatus(msg.provider, "broken").catch(() => undefined);
  }

  /** Sends one message; a refused token marks the provider's connections broken. */
  private async reply(adapter: ChannelAdapter, msg: InboundMessage | (ReplyTarget & { provider: string }), text: string): Promise<void> {
    try {
      await adapter.send(msg, text);
    } catch (err) {
      await this.replyFailed(msg, err);
    }
  }

  /** Waits for the reply streams in progress (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.replies]);
  }
}

/** Whose open question a message may answer: the same user in the same chat of the same platform (and workspace). */
function clarificationKey(msg: InboundMessage): string {
  return `${msg.provider}:${msg.workspaceId ?? ""}:${msg.chatId}:${msg.userId}`;
}
