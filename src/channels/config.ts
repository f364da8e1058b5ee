// The `channels:`, `channel_connections:` and `dedupe_storage:` sections of config.yaml (DeerFlow
// config.example.yaml), parsed here rather than in the core schema: the loader keeps unknown top-level keys, and
// only the channel runtime reads these. Every platform API root is a key, so tests point them at local fakes.
import { z } from "zod";

/** A list of ids, or one id as a string (upstream accepts both for `allowed_users`). */
const IdList = z.union([z.string(), z.number()]).transform((v) => [String(v)]).or(z.array(z.union([z.string(), z.number()])).transform((l) => l.map(String))).default([]);

/** Keys every platform section shares. */
const Common = {
  enabled: z.boolean().default(false),
  /** Platform user ids allowed to talk to the bot; empty: everyone (upstream). */
  allowed_users: IdList,
  /** Chats / channels the bot answers in; empty: every one (our name for Discord's `allowed_channels`, on all platforms). */
  allowed_channels: IdList,
  /** In group chats, answer only when the bot is mentioned (DMs always). */
  mention_only: z.boolean().default(false),
  /** Shortest interval between two edits of a streamed reply, in ms (the platform's per-chat edit limit). */
  stream_edit_interval_ms: z.number().int().min(0).max(60_000).optional(),
};

/** `channels.telegram`: Bot API over HTTPS; long polling (default) or a webhook with the secret token header. */
export const TelegramSection = z.looseObject({
  ...Common,
  bot_token: z.string().default(""),
  /** The Bot API root (`https://api.telegram.org`); requests go to `<api_base>/bot<token>/<method>`. */
  api_base: z.string().url().default("https://api.telegram.org"),
  mode: z.enum(["polling", "webhook"]).default("polling"),
  /** `webhook` mode: the `X-Telegram-Bot-Api-Secret-Token` every delivery must carry (setWebhook `secret_token`). */
  webhook_secret: z.string().default(""),
  /** getUpdates long-poll timeout in seconds (upstream `polling_timeout`). */
  polling_timeout: z.number().int().min(0).max(50).default(25),
}).superRefine((v, ctx) => {
  if (v.enabled && !v.bot_token) ctx.addIssue({ code: "custom", message: "channels.telegram.bot_token is required when the channel is enabled" });
  if (v.enabled && v.mode === "webhook" && !v.webhook_secret) ctx.addIssue({ code: "custom", message: "channels.telegram.webhook_secret is required in webhook mode (Telegram's secret token header is how deliveries are verified)" });
});

/**
 * `channels.slack`: Socket Mode (upstream's mode: `app_token`, no public URL) or the Events API webhook
 * (`signing_secret` and no `app_token`). The rule is {@link slackMode}; with neither key the start stops.
 */
export const SlackSection = z.looseObject({
  ...Common,
  bot_token: z.string().default(""),
  /** App-level token (`xapp-...`, scope `connections:write`): when set, events arrive over Socket Mode. */
  app_token: z.string().default(""),
  /** The app's signing secret: events webhook mode (only without `app_token`) verifies every delivery with it. */
  signing_secret: z.string().default(""),
  /** The Web API root (`https://slack.com/api`); requests go to `<api_base>/<method>` (apps.connections.open too). */
  api_base: z.string().url().default("https://slack.com/api"),
}).superRefine((v, ctx) => {
  if (v.enabled && !v.bot_token) ctx.addIssue({ code: "custom", message: "channels.slack.bot_token is required when the channel is enabled" });
  if (v.enabled && !v.app_token && !v.signing_secret) ctx.addIssue({ code: "custom", message: "channels.slack needs app_token (xapp-..., Socket Mode) or signing_secret (Events API webhook at /api/channels/webhooks/slack)" });
});

/** How Slack events arrive: `socket` when `app_token` is set (upstream's mode), else `webhook` (signing_secret). */
export function slackMode(section: { app_token: string }): "socket" | "webhook" {
  return section.app_token ? "socket" : "webhook";
}

/** `channels.feishu.domain`: the Open Platform root; `feishu` / `lark` name the two public ones (upstream takes a URL). */
export const FEISHU_DOMAINS: Readonly<Record<string, string>> = { feishu: "https://open.feishu.cn", lark: "https://open.larksuite.com" };

/** A Feishu / Lark app id as the platform issues it (and as the long-connection SDK requires): `cli_` + 16 hex. */
const FEISHU_APP_ID = /^cli_[0-9a-fA-F]{16}$/;

/**
 * `channels.feishu`: Feishu / Lark. Upstream keys (`app_id`, `app_secret`, `domain`, `verification_token`) plus
 * `encrypt_key` and `mode`. The default is upstream's: the long connection (websocket, through lark-oapi's
 * `WSClient`), held by one gateway process at a time; `mode: webhook` takes the event callback URL instead.
 */
export const FeishuSection = z.looseObject({
  ...Common,
  app_id: z.string().default(""),
  app_secret: z.string().default(""),
  /** The API root: `https://open.feishu.cn` (default), `https://open.larksuite.com`, `feishu`, `lark`, or any URL (tests). */
  domain: z.string().default("https://open.feishu.cn").transform((d) => FEISHU_DOMAINS[d.toLowerCase()] ?? d).pipe(z.string().url()),
  /** `websocket`: upstream's long connection (default, no public URL needed); `webhook`: the event callback endpoint. */
  mode: z.enum(["websocket", "webhook"]).default("websocket"),
  /** The app's Verification Token: every plaintext event's `token` must equal it. */
  verification_token: z.string().default(""),
  /** The app's Encrypt Key: events arrive AES-256-CBC encrypted and signed (`X-Lark-Signature`). */
  encrypt_key: z.string().default(""),
}).superRefine((v, ctx) => {
  if (!v.enabled) return;
  if (!v.app_id || !v.app_secret) ctx.addIssue({ code: "custom", message: "channels.feishu.app_id and app_secret are required when the channel is enabled" });
  if (v.mode === "websocket" && v.app_id && !FEISHU_APP_ID.test(v.app_id)) ctx.addIssue({ code: "custom", message: "channels.feishu.app_id must be the app's ID as the Open Platform shows it (cli_ followed by 16 hex digits): the long connection refuses any other" });
  if (v.mode === "webhook" && !v.verification_token && !v.encrypt_key) ctx.addIssue({ code: "custom", message: "channels.feishu.verification_token or encrypt_key is required in webhook mode (event deliveries are verified with it)" });
});

/**
 * `channels.discord`: the Gateway (websocket) and the REST API. Upstream keys: `bot_token`, `allowed_guilds`,
 * `mention_only`, `allowed_channels` (upstream: channels exempt from mention_only, not an allow-list), `thread_mode`
 * (a Discord thread per channel conversation; unset: as `mention_only`, upstream's default). Plus `api_base` and
 * `gateway_url` for other roots.
 */
export const DiscordSection = z.looseObject({
  ...Common,
  bot_token: z.string().default(""),
  /** Guild (server) ids the bot answers in; empty: every guild. When set, DMs are refused too (upstream). */
  allowed_guilds: IdList,
  /** Start a Discord thread from a server message and answer there (discord-threads.ts); unset: `mention_only`. */
  thread_mode: z.boolean().optional(),
  /** The REST root (`https://discord.com/api/v10`); requests go to `<api_base>/channels/...`. */
  api_base: z.string().url().default("https://discord.com/api/v10"),
  /** The Gateway URL; empty: asked from `GET <api_base>/gateway/bot` (Discord's documented way). */
  gateway_url: z.string().default(""),
}).superRefine((v, ctx) => {
  if (!v.enabled) return;
  if (!v.bot_token) ctx.addIssue({ code: "custom", message: "channels.discord.bot_token is required when the channel is enabled" });
});

/**
 * `channels.dingtalk`: Stream mode (upstream dingtalk.py: `client_id` / `client_secret`, `allowed_users`,
 * `card_template_id`: an AI Card template with a `content` variable; answers then stream into a card). Plus
 * `api_base`, the root of api.dingtalk.com (the Stream open-connection call, the access token, robot and card API),
 * and `oapi_base`, the root of oapi.dingtalk.com (the media upload of presented files).
 */
export const DingTalkSection = z.looseObject({
  ...Common,
  client_id: z.string().default(""),
  client_secret: z.string().default(""),
  /** Upstream's AI Card template id: a run's answer streams into a card of it (its `content` key); empty: one Markdown message at the end. */
  card_template_id: z.string().default(""),
  /** The OpenAPI root (`https://api.dingtalk.com`); requests go to `<api_base>/v1.0/...`. */
  api_base: z.string().url().default("https://api.dingtalk.com"),
  /** The legacy OpenAPI root (`https://oapi.dingtalk.com`) of the media upload (`<oapi_base>/media/upload`) for files the agent presents. */
  oapi_base: z.string().url().default("https://oapi.dingtalk.com"),
}).superRefine((v, ctx) => {
  if (!v.enabled) return;
  if (!v.client_id || !v.client_secret) ctx.addIssue({ code: "custom", message: "channels.dingtalk.client_id and client_secret are required when the channel is enabled" });
});

/** WeCom's long-connection endpoint (the intelligent bot's websocket; upstream's SDK default). */
export const WECOM_WS_URL = "wss://openws.work.weixin.qq.com";

/**
 * `channels.wecom`: the WeCom (企业微信) intelligent bot over its long connection. Upstream keys: `bot_id`,
 * `bot_secret`, `working_message` (a placeholder upstream streams before each answer: not offered, refused when
 * set). Plus `ws_url` for another endpoint (tests: a local fake).
 */
export const WecomSection = z.looseObject({
  ...Common,
  bot_id: z.string().default(""),
  bot_secret: z.string().default(""),
  /** The long-connection URL (`wss://openws.work.weixin.qq.com`). */
  ws_url: z.string().url().default(WECOM_WS_URL),
  working_message: z.string().optional(),
}).superRefine((v, ctx) => {
  if (!v.enabled) return;
  if (!v.bot_id || !v.bot_secret) ctx.addIssue({ code: "custom", message: "channels.wecom.bot_id and bot_secret are required when the channel is enabled" });
  if (v.working_message) ctx.addIssue({ code: "custom", message: "channels.wecom.working_message is not offered (the answer itself streams from its first token); remove it" });
});

/** Upstream's session defaults for every channel run (`channels.session`). */
const SessionSection = z.looseObject({
  assistant_id: z.string().default("lead_agent"),
  config: z.record(z.string(), z.unknown()).default({}),
  context: z.record(z.string(), z.unknown()).default({}),
});

/** The `channels` section. Platforms other than these five are refused when enabled (config-keys.ts). */
export const ChannelsSection = z.looseObject({
  session: SessionSection.default({ assistant_id: "lead_agent", config: {}, context: {} }),
  /** Inbound messages handled at once (upstream `max_concurrency`). */
  max_concurrency: z.number().int().min(1).max(100).default(5),
  /** Queued inbound messages at most (upstream `inbound_queue_maxsize`); beyond it the platform's retry redelivers. */
  inbound_queue_maxsize: z.number().int().min(1).default(1000),
  /** The longest inbound text handed to a run, in characters; a longer one is answered with a message, nothing starts. */
  max_message_chars: z.number().int().min(1).max(1_000_000).default(100_000),
  telegram: TelegramSection.optional(),
  slack: SlackSection.optional(),
  feishu: FeishuSection.optional(),
  discord: DiscordSection.optional(),
  dingtalk: DingTalkSection.optional(),
  wecom: WecomSection.optional(),
});
export type ChannelsConfig = z.infer<typeof ChannelsSection>;
export type TelegramConfig = z.infer<typeof TelegramSection>;
export type SlackConfig = z.infer<typeof SlackSection>;
export type FeishuConfig = z.infer<typeof FeishuSection>;
export type DiscordConfig = z.infer<typeof DiscordSection>;
export type DingTalkConfig = z.infer<typeof DingTalkSection>;
export type WecomConfig = z.infer<typeof WecomSection>;
/** The platforms this gateway runs (a `channels.<name>` section each). */
export type PlatformName = "telegram" | "slack" | "feishu" | "discord" | "dingtalk" | "wecom";
/** The keys every platform section has (the manager's allow-lists and mention rule read them per message). */
export type PlatformSection = { allowed_users: string[]; allowed_channels: string[]; mention_only: boolean; allowed_guilds?: string[] };

/** `channel_connections`: per-user bindings of platform identities (upstream channel_connections_config.py). */
export const ChannelConnectionsSection = z.looseObject({
  enabled: z.boolean().default(false),
  /** Unbound platform users get upstream's "connect first" answer and start nothing (upstream default true). */
  require_bound_identity: z.boolean().default(true),
  telegram: z.looseObject({ enabled: z.boolean().default(false), bot_username: z.string().default("") }).optional(),
  slack: z.looseObject({ enabled: z.boolean().default(false) }).optional(),
  feishu: z.looseObject({ enabled: z.boolean().default(false) }).optional(),
  discord: z.looseObject({ enabled: z.boolean().default(false) }).optional(),
  dingtalk: z.looseObject({ enabled: z.boolean().default(false) }).optional(),
  wecom: z.looseObject({ enabled: z.boolean().default(false) }).optional(),
});
export type ChannelConnectionsConfig = z.infer<typeof ChannelConnectionsSection>;

/** `dedupe_storage`: where inbound event ids are remembered (`auto`: Redis when scaled out, else the gateway database). */
export const DedupeStorageSection = z.looseObject({
  backend: z.enum(["auto", "memory", "postgres"]).default("auto"),
  /** Seconds an event id is remembered (upstream's 10-minute window). */
  ttl_seconds: z.number().int().min(1).default(600),
});
export type DedupeStorageConfig = z.infer<typeof DedupeStorageSection>;

/** The three sections, parsed. */
export interface ChannelSettings {
  channels: ChannelsConfig;
  connections: ChannelConnectionsConfig;
  dedupe: DedupeStorageConfig;
}

/**
 * Parses the channel sections out of the raw app config (`$VARS` already resolved by the loader).
 * @throws Error naming the first bad key ("channels.slack.signing_secret is required ...").
 */
export function readChannelSettings(raw: Record<string, unknown>): ChannelSettings {
  const parse = <T>(name: string, schema: z.ZodType<T>, value: unknown): T => {
    const result = schema.safeParse(value ?? {});
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    const where = [name, ...issue.path.map(String)].join(".");
    throw new Error(issue.code === "custom" ? issue.message : `${where}: ${issue.message}`);
  };
  return {
    channels: parse("channels", ChannelsSection, raw.channels),
    connections: parse("channel_connections", ChannelConnectionsSection, raw.channel_connections),
    dedupe: parse("dedupe_storage", DedupeStorageSection, raw.dedupe_storage),
  };
}

/** Each platform's section schema, by its key under `channels:`. */
const PLATFORM_SECTIONS: Readonly<Record<PlatformName, { shape: Record<string, unknown> }>> = {
  telegram: TelegramSection, slack: SlackSection, feishu: FeishuSection, discord: DiscordSection, dingtalk: DingTalkSection, wecom: WecomSection,
};

/**
 * The keys set in an enabled `channels.<platform>` section that this gateway does not read, as dotted paths
 * (`channels.telegram.mention_ony`): a misspelling, or an upstream key it does not offer. The sections stay loose so
 * an upstream config parses; the start logs these so none is ignored silently.
 */
export function unreadChannelKeys(raw: Record<string, unknown>): string[] {
  const channels = raw.channels;
  if (!channels || typeof channels !== "object") return [];
  const unread: string[] = [];
  for (const [name, schema] of Object.entries(PLATFORM_SECTIONS)) {
    const section = (channels as Record<string, unknown>)[name];
    if (!section || typeof section !== "object" || (section as { enabled?: unknown }).enabled !== true) continue;
    for (const key of Object.keys(section)) if (!(key in schema.shape)) unread.push(`channels.${name}.${key}`);
  }
  return unread;
}

/** The platforms this gateway offers, with their display names and connect modes (upstream `_PROVIDER_META`). */
export const PROVIDERS: Readonly<Record<string, { display_name: string; auth_mode: "deep_link" | "binding_code" }>> = {
  telegram: { display_name: "Telegram", auth_mode: "deep_link" },
  slack: { display_name: "Slack", auth_mode: "binding_code" },
  feishu: { display_name: "Feishu", auth_mode: "binding_code" },
  discord: { display_name: "Discord", auth_mode: "binding_code" },
  dingtalk: { display_name: "DingTalk", auth_mode: "binding_code" },
  wecom: { display_name: "WeCom", auth_mode: "binding_code" },
};
