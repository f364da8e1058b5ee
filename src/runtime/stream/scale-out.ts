// Builds the stream bridge and run manager from the `stream_bridge` section: in memory for one process (the
// default), or on Redis (`type: redis`) so that several gateway processes behave as one service.
import type { Logger } from "pino";
import { StreamBridgeConfigSchema, type AppConfig } from "../../config/schema.js";
import type { Persistence } from "../persistence/persistence.js";
import { RunManager } from "../runs/run-manager.js";
import { MemoryStreamBridge, type StreamBridge } from "./stream-bridge.js";

/** The run-coordination services and how to stop them. */
export interface RunCoordination {
  bridge: StreamBridge;
  runs: RunManager;
  /** True when runs, events and cancels are shared with other processes (Redis bridge). */
  distributed: boolean;
  /** A round trip to Redis (Redis bridge only): rejects while it is down. For readiness (`GET /readyz`). */
  ping?(): Promise<void>;
  /** Stops heartbeats and closes connections; call after the bridge was closed. */
  close(): Promise<void>;
}

/** Selects the Redis bridge when config.yaml has no `stream_bridge` section (DeerFlow `_ENV_REDIS_URL`). */
export const STREAM_BRIDGE_REDIS_URL_ENV = "DEER_FLOW_STREAM_BRIDGE_REDIS_URL";
/** The Redis URL used when nothing names one (DeerFlow `_resolve_redis_url`). */
export const DEFAULT_STREAM_BRIDGE_REDIS_URL = "redis://localhost:6379/0";

/**
 * The effective `stream_bridge` section: the configured one, else a Redis one when `DEER_FLOW_STREAM_BRIDGE_REDIS_URL`
 * is set (what Docker Compose sets), else null (the in-memory bridge). Mirrors DeerFlow `_resolve_config`.
 */
export function resolveStreamBridgeSection(appConfig: AppConfig, env: NodeJS.ProcessEnv = process.env): AppConfig["stream_bridge"] {
  if (appConfig.stream_bridge) return appConfig.stream_bridge;
  const url = env[STREAM_BRIDGE_REDIS_URL_ENV];
  return url ? StreamBridgeConfigSchema.parse({ type: "redis", redis_url: url }) : null;
}

/**
 * The Redis URL of the effective `stream_bridge` section ({@link resolveStreamBridgeSection}), or null for the
 * in-memory bridge. For `type: redis` the URL is `url` / `redis_url`, else `DEER_FLOW_STREAM_BRIDGE_REDIS_URL`, else
 * `REDIS_URL`, else `redis://localhost:6379/0` (DeerFlow `_resolve_redis_url`).
 */
export function streamBridgeUrl(appConfig: AppConfig, env: NodeJS.ProcessEnv = process.env): string | null {
  const section = resolveStreamBridgeSection(appConfig, env);
  if (section?.type !== "redis") return null;
  return section.url || section.redis_url || env[STREAM_BRIDGE_REDIS_URL_ENV] || env.REDIS_URL || DEFAULT_STREAM_BRIDGE_REDIS_URL;
}

/**
 * Opens run coordination (restart-only). `stream_bridge.type: redis` connects to `url` (fails fast when Redis is
 * unreachable) and returns a {@link RedisStreamBridge} and a {@link DistributedRunManager} sharing one command
 * connection; otherwise a {@link MemoryStreamBridge} and a process-local {@link RunManager}.
 * @param queueMaxSize Events retained per run (overrides `stream_bridge.queue_maxsize` when given).
 * @throws Error "cannot connect to stream_bridge.url: ..." when Redis does not answer.
 */
export async function openRunCoordination(appConfig: AppConfig, persistence: Persistence, logger: Logger, queueMaxSize?: number): Promise<RunCoordination> {
  const url = streamBridgeUrl(appConfig);
  const section = resolveStreamBridgeSection(appConfig);
  const maxSize = queueMaxSize ?? section?.queue_maxsize ?? 256;
  if (!url || !section) {
    // One process: the runs a crash cuts short are resumed when it starts again, unless max_resumes is 0.
    const resumes = (section?.max_resumes ?? 3) > 0 ? persistence.resumes : undefined;
    return { bridge: new MemoryStreamBridge(maxSize), runs: new RunManager(persistence.runs, resumes), distributed: false, close: async () => {} };
  }
  const { Redis } = await import("ioredis");
  const { RedisStreamBridge } = await import("./redis-stream-bridge.js");
  const { DistributedRunManager } = await import("../runs/distributed-run-manager.js");
  const redis = new Redis(url, { enableAutoPipelining: true, lazyConnect: true, maxRetriesPerRequest: 3, connectTimeout: 5_000 });
  // Errors surface on the commands; without a listener ioredis would also log each reconnect attempt loudly.
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new Error(`cannot connect to stream_bridge.url: ${(err as Error).message}`);
  }
  const ttlMs = section.stream_ttl_seconds * 1000;
  const bridge = new RedisStreamBridge({ redis, prefix: section.key_prefix, queueMaxSize: maxSize, ttlMs, logger });
  const runs = await DistributedRunManager.start({
    redis,
    prefix: section.key_prefix,
    runs: persistence.runs,
    threads: persistence.threads,
    logger,
    // run_ownership (DeerFlow's lease and grace) replaces the bridge's lease when set.
    leaseMs: appConfig.run_ownership ? (appConfig.run_ownership.lease_seconds + appConfig.run_ownership.grace_seconds) * 1000 : section.lease_ms,
    streamTtlMs: ttlMs,
    maxResumes: section.max_resumes,
  });
  return {
    bridge,
    runs,
    distributed: true,
    ping: async () => void (await redis.ping()),
    close: async () => {
      await runs.stop();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
