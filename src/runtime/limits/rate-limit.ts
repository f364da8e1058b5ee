// Request rate limits per principal with @fastify/rate-limit: one counter per API key (else user, else client IP)
// across all routes, limits read from `limits.rate_limit` on every request (hot-reloadable), counters in process
// memory or, with `limits.rate_limit.redis_url` (default: the stream bridge's Redis when the database is shared), in
// Redis shared by every replica.
import { fastifyRateLimit } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AppConfig } from "../../config/schema.js";
import type { GatewayMetrics } from "../../observability/metrics.js";

/** Routes never rate limited: probes and scrapers must see an overloaded gateway. */
export const RATE_LIMIT_EXEMPT_ROUTES: ReadonlySet<string> = new Set(["/health", "/healthz", "/readyz", "/metrics"]);

/** Options of {@link registerRateLimit}. */
export interface RateLimitOptions {
  getAppConfig: () => AppConfig;
  metrics?: GatewayMetrics;
  /** An ioredis client for the shared store (default: built from `limits.rate_limit.redis_url` when set). */
  redis?: unknown;
  /**
   * The service's Redis (the stream bridge's), used when `redis_url` is unset and the database is shared by several
   * processes, so a window counts every process's requests. Null or absent: none.
   */
  sharedRedisUrl?: string | null;
  /** Key prefix of the counters (default `deerflow-rl-`; the stream bridge's `key_prefix` + `rl-` on its Redis). */
  keyPrefix?: string;
  /** True when other processes share the database: counters left in memory are then logged as per process. */
  scaledOut?: boolean;
  /** Where that start-up warning goes. */
  log?: { warn(obj: object, msg: string): void };
}

/**
 * The counter key of a request: `key:<apiKeyId>` for an API key (each key has its own budget), `user:<id>` for a
 * signed-in user, `ip:<address>` for anonymous requests (sign-in routes of an auth-enabled server).
 */
export function rateLimitKey(request: FastifyRequest): string {
  const principal = request.principal;
  if (principal?.apiKeyId) return `key:${principal.apiKeyId}`;
  if (principal) return `user:${principal.id}`;
  return `ip:${request.ip}`;
}

/** Imports ioredis by name at run time: it is only needed (and only installed) for a shared store. */
async function connectRedis(url: string): Promise<{ quit(): Promise<unknown> }> {
  const specifier = "ioredis";
  let mod: { default?: unknown; Redis?: unknown };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch {
    throw new Error("limits.rate_limit.redis_url needs the ioredis package: npm install ioredis");
  }
  const Redis = (mod.Redis ?? mod.default) as new (url: string, opts: Record<string, unknown>) => { quit(): Promise<unknown> };
  // Fail fast rather than queueing commands while Redis is down (skipOnError lets requests through then).
  return new Redis(url, { connectTimeout: 1000, maxRetriesPerRequest: 1, enableOfflineQueue: false });
}

/**
 * Registers @fastify/rate-limit for every route but {@link RATE_LIMIT_EXEMPT_ROUTES}. The check runs in
 * `preHandler`, after the auth hook has resolved the principal and before any handler work. Over the limit: 429
 * `{detail}` with `Retry-After` (seconds) and `x-ratelimit-*` headers, counted in `deerflow_limit_rejections_total`.
 * Off unless `limits.rate_limit.enabled`. With Redis, a Redis outage lets requests through (`skipOnError`)
 * instead of failing them. Call before the routes are registered.
 * @throws Error when `redis_url` is set and ioredis is not installed.
 */
export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  const section = () => options.getAppConfig().limits.rate_limit;
  const redisUrl = section().redis_url ?? options.sharedRedisUrl ?? null;
  const redis = options.redis ?? (redisUrl ? await connectRedis(redisUrl) : undefined);
  // Refuse nothing silently: scaled out with no Redis, each process counts its own window.
  if (!redis && options.scaledOut && section().enabled) {
    options.log?.warn({ limit: "limits.rate_limit" }, "rate-limit windows are per process (no Redis): a client may send max requests to each process; set limits.rate_limit.redis_url or a Redis stream_bridge");
  }
  if (redis && !options.redis) app.addHook("onClose", async () => void (await (redis as { quit(): Promise<unknown> }).quit().catch(() => undefined)));
  await app.register(fastifyRateLimit, {
    global: true,
    hook: "preHandler",
    ...(redis ? { redis, nameSpace: options.keyPrefix ?? "deerflow-rl-", skipOnError: true } : {}),
    keyGenerator: rateLimitKey,
    max: () => section().max,
    timeWindow: () => Math.round(section().window_seconds * 1000),
    allowList: (request) => !section().enabled || RATE_LIMIT_EXEMPT_ROUTES.has(request.routeOptions.url ?? ""),
    onExceeded: () => options.metrics?.limitRejections.inc({ limit: "rate" }),
    errorResponseBuilder: (request, context) => {
      const who = { key: "API key", user: "user", ip: "client address" }[rateLimitKey(request).split(":")[0]] ?? "caller";
      const retryIn = Math.max(1, Math.ceil(context.ttl / 1000));
      return Object.assign(new Error(`Rate limit exceeded: at most ${context.max} requests per ${section().window_seconds} s for this ${who}; retry in ${retryIn} s`), { statusCode: 429 });
    },
  });
}
