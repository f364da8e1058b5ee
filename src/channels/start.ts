// Whether and how the gateway starts its channel runtime: only when config.yaml enables a platform or the
// per-user connections, so a gateway without channels opens no channel database.
import type { Logger } from "pino";
import type { AppConfig } from "../config/schema.js";
import { databaseUrl, type Persistence } from "../runtime/persistence/persistence.js";
import type { RunManager } from "../runtime/runs/run-manager.js";
import type { RunService } from "../runtime/runs/run-service.js";
import type { StreamBridge } from "../runtime/stream/stream-bridge.js";
import { readChannelSettings, unreadChannelKeys, type PlatformName } from "./config.js";
import type { GatewaySandboxProvider } from "../sandbox/security.js";
import { ChannelService } from "./service.js";

export { ChannelService } from "./service.js";

/** The platform sections of `channels:` that start the channel runtime when enabled. */
const PLATFORM_NAMES: readonly PlatformName[] = ["telegram", "slack", "feishu", "discord", "dingtalk", "wecom"];

/** What {@link startChannels} needs from buildApp. */
export interface StartChannelsOptions {
  runService: RunService;
  runs: RunManager;
  persistence: Persistence;
  bridge: StreamBridge;
  getAppConfig: () => AppConfig;
  home: string;
  redisUrl: string | null;
  authDisabledUser: string | null;
  logger: Logger;
  /** The process's sandbox provider (thread directories for channel files). */
  sandbox: GatewaySandboxProvider;
}

/**
 * Starts the channel service when `channels.<telegram|slack|feishu|discord|dingtalk|wecom>.enabled` or `channel_connections.enabled` is true, else
 * resolves null. @throws Error naming a bad channel key (the start stops, as for any bad config).
 */
export async function startChannels(options: StartChannelsOptions): Promise<ChannelService | null> {
  const rawConfig = () => options.getAppConfig() as unknown as Record<string, unknown>;
  const settings = readChannelSettings(rawConfig());
  // Every platform section counts: a DingTalk- or WeCom-only config (upstream's section as it is) starts them too.
  const anyPlatform = PLATFORM_NAMES.some((name) => settings.channels[name]?.enabled);
  if (!anyPlatform && !settings.connections.enabled) return null;
  for (const key of unreadChannelKeys(rawConfig())) {
    options.logger.warn({ key }, `${key} is not a key this gateway reads (misspelled, or an upstream key it does not offer): it has no effect`);
  }
  return ChannelService.start({
    runService: options.runService, runs: options.runs, persistence: options.persistence, bridge: options.bridge, rawConfig,
    modelNames: () => options.getAppConfig().models.map((m) => m.name), home: options.home, redisUrl: options.redisUrl,
    databaseUrl: databaseUrl(options.getAppConfig()),
    authDisabledUser: options.authDisabledUser, logger: options.logger, sandbox: options.sandbox,
  });
}
