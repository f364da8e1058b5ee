// The channel service (DeerFlow app/channels/service.py): builds the enabled platform adapters, the message bus,
// the manager and the stores from config.yaml at start-up, and serves the per-user connection API the routes call
// (upstream routers/channel_connections.py). One per gateway process; every process serves webhooks, the dedupe
// store makes each event run once, and a long poll runs in the process holding its lease.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import type { RunManager } from "../runtime/runs/run-manager.js";
import type { RunService } from "../runtime/runs/run-service.js";
import type { Persistence } from "../runtime/persistence/persistence.js";
import type { StreamBridge } from "../runtime/stream/stream-bridge.js";
import { openSqlite } from "../runtime/persistence/sqlite/sqlite.js";
import { BadRequestError, NotFoundError, RateLimitedError } from "../errors.js";
import { PROVIDERS, readChannelSettings, type ChannelSettings, type PlatformName } from "./config.js";
import { DingTalkAdapter } from "./dingtalk.js";
import { DiscordAdapter } from "./discord.js";
import { FeishuAdapter } from "./feishu.js";
import { ChannelManager } from "./manager.js";
import { MessageBus, QueueFullError } from "./message-bus.js";
import { RedisChannelCoordination } from "./redis-coordination.js";
import { SlackAdapter } from "./slack.js";
import { SqliteChannelStore, type ChannelStore, type ChannelConnection, type DedupeStore, type LeaseStore } from "./store.js";
import { TelegramAdapter } from "./telegram.js";
import { WecomAdapter } from "./wecom.js";
import type { ChannelAdapter, ConnectionStatusSink, WebhookAnswer, WebhookRequest } from "./types.js";
import type { GatewaySandboxProvider } from "../sandbox/security.js";
import { UploadsConfigSchema } from "../config/schema.js";
import type { UploadsConfig } from "./files.js";

/** The `uploads` section of the config now (its defaults when absent). */
function uploadsOf(raw: Record<string, unknown>): UploadsConfig {
  return UploadsConfigSchema.parse(raw.uploads ?? {});
}

/** Upstream `_STATE_TTL_SECONDS`: a connect code lives ten minutes. */
export const CONNECT_CODE_TTL_SECONDS = 600;
/** Upstream `_MAX_PENDING_CONNECT_CODES_PER_PROVIDER`. */
const MAX_PENDING_CODES = 5;

/** What the channel service needs from the app (passed in by buildApp). */
export interface ChannelServiceDeps {
  runService: RunService;
  runs: RunManager;
  persistence: Persistence;
  bridge: StreamBridge;
  /** The raw config of the current request or run (the loader's result, `$VARS` resolved). */
  rawConfig: () => Record<string, unknown>;
  modelNames: () => string[];
  home: string;
  /** The Redis URL of `stream_bridge` when scaled out: dedupe ids and poll leases go there. */
  redisUrl: string | null;
  /** The PostgreSQL URL when `database.backend: postgres`: the channel store lives there (else channels.sqlite). */
  databaseUrl?: string | null;
  authDisabledUser: string | null;
  logger: Logger;
  /** Thread directories (a user's files become uploads there; presented outputs are read from there). */
  sandbox: GatewaySandboxProvider;
  /** Counts platform API calls (tests and the benchmark read it). */
  apiCalls?: { calls: number };
  onFirstReply?: (ms: number, provider: string) => void;
}

/** An in-process dedupe store (`dedupe_storage.backend: memory`): one process only (upstream logs the same caveat). */
class MemoryDedupe implements DedupeStore {
  private readonly seen = new Map<string, number>();
  async tryRecord(key: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if ((this.seen.get(key) ?? 0) > now) return false;
    this.seen.set(key, now + ttlMs);
    if (this.seen.size > 10_000) for (const [k, t] of this.seen) if (t <= now) this.seen.delete(k);
    return true;
  }
  async release(key: string): Promise<void> {
    this.seen.delete(key);
  }
}

/** The channel store: PostgreSQL when the database is shared (`databaseUrl`), else `<home>/data/channels.sqlite`. */
async function openStore(deps: ChannelServiceDeps): Promise<ChannelStore> {
  if (deps.databaseUrl) {
    const { openPgChannelStore } = await import("./pg-store.js");
    return openPgChannelStore(deps.databaseUrl);
  }
  const dir = path.join(deps.home, "data");
  mkdirSync(dir, { recursive: true });
  return new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
}

/**
 * Where inbound event ids go (upstream dedupe_store.build_inbound_dedupe_store): `memory`: this process; `postgres`:
 * the PostgreSQL channel store (with another database, upstream warns and falls back; here the warning names the
 * channel store used instead); `auto`: Redis when scaled out, else the channel store (PostgreSQL or SQLite).
 */
function pickDedupe(backend: "auto" | "memory" | "postgres", store: ChannelStore, redis: RedisChannelCoordination | null, deps: ChannelServiceDeps): DedupeStore {
  if (backend === "memory") return new MemoryDedupe();
  if (backend === "postgres") {
    if (deps.databaseUrl) return store;
    deps.logger.warn("dedupe_storage.backend postgres needs database.backend: postgres; inbound event ids go to the channel database under DEER_FLOW_HOME instead (shared by this host's processes only)");
  }
  return redis ?? store;
}

/** The provider entry of `GET /api/channels/providers` (upstream `ChannelProviderResponse`). */
export interface ProviderView {
  provider: string;
  display_name: string;
  enabled: boolean;
  configured: boolean;
  connectable: boolean;
  unavailable_reason: string | null;
  auth_mode: string;
  connection_status: string;
  credential_fields: { name: string; label: string; type: string; required: boolean }[];
  credential_values: Record<string, string>;
}

const CREDENTIAL_FIELDS: Record<string, ProviderView["credential_fields"]> = {
  telegram: [{ name: "bot_token", label: "Bot token", type: "password", required: true }, { name: "bot_username", label: "Bot username", type: "text", required: true }],
  slack: [{ name: "bot_token", label: "Bot token", type: "password", required: true }, { name: "app_token", label: "App token", type: "password", required: true }],
  discord: [{ name: "bot_token", label: "Bot token", type: "password", required: true }],
  feishu: [{ name: "app_id", label: "App ID", type: "text", required: true }, { name: "app_secret", label: "App secret", type: "password", required: true }],
  dingtalk: [{ name: "client_id", label: "Client ID", type: "text", required: true }, { name: "client_secret", label: "Client secret", type: "password", required: true }],
  wecom: [{ name: "bot_id", label: "Bot ID", type: "text", required: true }, { name: "bot_secret", label: "Bot secret", type: "password", required: true }],
};

/** The running channel runtime of one gateway process. */
export class ChannelService {
  private readonly adapters = new Map<string, ChannelAdapter>();
  private readonly manager: ChannelManager;
  private readonly bus: MessageBus;
  private coordination: RedisChannelCoordination | null = null;
  private lastGood: ChannelSettings;

  private constructor(private readonly deps: ChannelServiceDeps, private readonly store: ChannelStore, boot: ChannelSettings, dedupe: DedupeStore, lease: LeaseStore, coordination: RedisChannelCoordination | null) {
    this.lastGood = boot;
    this.coordination = coordination;
    const holderId = `${hostname()}:${process.pid}:${randomUUID()}`;
    const { telegram, slack, feishu, discord, dingtalk, wecom } = boot.channels;
    const counter = deps.apiCalls;
    if (telegram?.enabled) this.adapters.set("telegram", new TelegramAdapter(telegram, { logger: deps.logger, lease, holderId, botUsername: boot.connections.telegram?.bot_username || undefined, counter }));
    // Each adapter sets its provider's connection status (Settings → Channels): `broken` on refused credentials.
    const status = (provider: string): ConnectionStatusSink => (s) => store.setProviderStatus(provider, s).catch((err: Error) => deps.logger.warn({ provider, err: err.message }, "channel connection status not stored"));
    const held = { logger: deps.logger, lease, holderId, counter };
    if (slack?.enabled) this.adapters.set("slack", new SlackAdapter(slack, { ...held, setStatus: status("slack") }));
    if (feishu?.enabled) this.adapters.set("feishu", new FeishuAdapter(feishu, { ...held, setStatus: status("feishu") }));
    if (discord?.enabled) this.adapters.set("discord", new DiscordAdapter(discord, { ...held, setStatus: status("discord") }));
    if (dingtalk?.enabled) this.adapters.set("dingtalk", new DingTalkAdapter(dingtalk, { ...held, setStatus: status("dingtalk") }));
    if (wecom?.enabled) this.adapters.set("wecom", new WecomAdapter(wecom, { ...held, setStatus: status("wecom") }));
    this.manager = new ChannelManager({
      runService: deps.runService, runs: deps.runs, threads: deps.persistence.threads, runRecords: deps.persistence.runs, bridge: deps.bridge, store, dedupe,
      settings: () => this.settings(), modelNames: deps.modelNames, sandbox: deps.sandbox, uploads: () => uploadsOf(deps.rawConfig()), authDisabledUser: deps.authDisabledUser, logger: deps.logger, onFirstReply: deps.onFirstReply,
    }, this.adapters);
    this.bus = new MessageBus((m) => this.manager.handle(m), {
      concurrency: boot.channels.max_concurrency, maxQueued: boot.channels.inbound_queue_maxsize,
      onError: (err) => deps.logger.error({ err: (err as Error).message }, "channel handler failed"),
    });
  }

  /**
   * Opens the store and starts every enabled adapter (restart-only: a platform section's credentials and mode are
   * read once). @throws Error naming a bad channel key, or when Redis does not answer.
   */
  static async start(deps: ChannelServiceDeps): Promise<ChannelService> {
    const settings = readChannelSettings(deps.rawConfig());
    const store = await openStore(deps);
    let coordination: RedisChannelCoordination | null = null;
    if (deps.redisUrl) {
      const { Redis } = await import("ioredis");
      const redis = new Redis(deps.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
      // A failed start leaves no open store behind (a PostgreSQL pool would keep the process alive).
      await redis.connect().catch(async (err: unknown) => {
        await store.close().catch(() => undefined);
        throw err;
      });
      coordination = new RedisChannelCoordination(redis);
    }
    const dedupe = pickDedupe(settings.dedupe.backend, store, coordination, deps);
    const service = new ChannelService(deps, store, settings, dedupe, coordination ?? store, coordination);
    for (const adapter of service.adapters.values()) await adapter.start((m) => service.bus.publish(m));
    return service;
  }

  /** The channel sections now (hot-reloaded allow-lists and limits); the last good value when the file is broken. */
  settings(): ChannelSettings {
    try {
      this.lastGood = readChannelSettings(this.deps.rawConfig());
    } catch {
      // Keep serving with the last good sections; the loader reports the broken file.
    }
    return this.lastGood;
  }

  /** `GET /api/channels/`: upstream's status shape. */
  status(): { service_running: boolean; channels: Record<string, { enabled: boolean; running: boolean }> } {
    return { service_running: true, channels: Object.fromEntries([...this.adapters.keys()].map((p) => [p, { enabled: true, running: true }])) };
  }

  /** Answers a platform webhook (`POST /api/channels/webhooks/:provider`): 404 for a provider not running. */
  async webhook(provider: string, request: WebhookRequest): Promise<WebhookAnswer> {
    const adapter = this.adapters.get(provider);
    if (!adapter?.handleWebhook) return { status: 404, body: { detail: `No ${provider} webhook is configured` } };
    try {
      return await adapter.handleWebhook(request);
    } catch (err) {
      if (err instanceof QueueFullError) return { status: 503, body: { detail: err.message } };
      throw err;
    }
  }

  /** `GET /api/channels/providers` for `userId` (upstream get_channel_providers). */
  async providers(userId: string): Promise<{ enabled: boolean; providers: ProviderView[] }> {
    const { connections } = this.settings();
    const mine = connections.enabled ? await this.store.listConnections(userId) : [];
    const providers = Object.entries(PROVIDERS).filter(([p]) => (connections[p as PlatformName]?.enabled ?? false)).map(([provider, meta]): ProviderView => {
      const running = this.adapters.has(provider);
      const connection = mine.find((c) => c.provider === provider);
      return {
        provider, display_name: meta.display_name, enabled: true, configured: running, connectable: running,
        unavailable_reason: running ? null : `${meta.display_name} channel is not configured on this server (channels.${provider} in config.yaml).`,
        auth_mode: meta.auth_mode,
        connection_status: connection?.status ?? (this.deps.authDisabledUser && running ? "connected" : "not_connected"),
        credential_fields: CREDENTIAL_FIELDS[provider], credential_values: provider === "telegram" && connections.telegram?.bot_username ? { bot_username: connections.telegram.bot_username } : ({} as Record<string, string>),
      };
    });
    return { enabled: connections.enabled, providers };
  }

  /** `GET /api/channels/connections`: the user's connections (upstream `ChannelConnectionResponse`). */
  async connections(userId: string): Promise<{ connections: Record<string, unknown>[] }> {
    if (!this.settings().connections.enabled) return { connections: [] };
    return { connections: (await this.store.listConnections(userId)).map(view) };
  }

  /**
   * `POST /api/channels/:provider/connect`: a one-time code and how to use it (upstream connect_channel_provider).
   * @throws BadRequestError when connections or the provider are off or not running; RateLimitedError (429) past
   *   five pending codes.
   */
  async connect(provider: string, userId: string): Promise<Record<string, unknown>> {
    const { connections } = this.settings();
    const meta = PROVIDERS[provider];
    if (!meta) throw new NotFoundError("Unknown channel provider");
    if (!connections.enabled) throw new BadRequestError("Channel connections are disabled");
    if (!connections[provider as PlatformName]?.enabled) throw new BadRequestError("Channel provider is not enabled");
    if (!this.adapters.has(provider)) throw new BadRequestError("Channel provider is not configured");
    const code = randomBytes(16).toString("base64url");
    if (!(await this.store.createConnectCode(userId, provider, code, CONNECT_CODE_TTL_SECONDS * 1000, MAX_PENDING_CODES))) {
      throw new RateLimitedError("Too many pending channel connection codes. Wait for existing codes to expire or use one of them.", CONNECT_CODE_TTL_SECONDS);
    }
    const username = connections.telegram?.bot_username;
    return {
      provider, mode: meta.auth_mode,
      url: provider === "telegram" && username ? `https://t.me/${username}?start=${code}` : null,
      code,
      instruction: provider === "telegram" ? `Send /start ${code} to the DeerFlow Telegram bot.` : `Send /connect ${code} to the DeerFlow ${meta.display_name} bot.`,
      expires_in: CONNECT_CODE_TTL_SECONDS,
    };
  }

  /** `DELETE /api/channels/connections/:id`. @throws NotFoundError for another user's or an unknown connection. */
  async disconnect(id: string, userId: string): Promise<void> {
    if (!this.settings().connections.enabled) throw new BadRequestError("Channel connections are disabled");
    if (!(await this.store.disconnect(id, userId))) throw new NotFoundError("Channel connection not found");
  }

  /** Stops the adapters, lets queued messages and reply streams finish, closes the stores. */
  async close(): Promise<void> {
    for (const adapter of this.adapters.values()) await adapter.stop().catch(() => undefined);
    await this.bus.drain();
    await this.manager.drain();
    await this.coordination?.close();
    await this.store.close();
  }
}

/** A connection as the web app reads it (upstream `ChannelConnectionResponse`; the owner id stays server-side). */
function view(c: ChannelConnection): Record<string, unknown> {
  return {
    id: c.id, provider: c.provider, status: c.status, external_account_id: c.external_account_id, external_account_name: c.external_account_name,
    workspace_id: c.workspace_id, workspace_name: null, scopes: [], metadata: c.metadata,
  };
}
