// `limits`: request rate limits, concurrent runs and daily token quotas per principal (all off by default).
import { z } from "zod";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/** `limits.rate_limit`: requests per time window per principal (@fastify/rate-limit). */
export const RateLimitConfigSchema = z.looseObject({
  enabled: z.boolean().default(false),
  /** Requests allowed per window and principal (API key, else user, else client IP). */
  max: z.number().int().min(1).default(120),
  /** Window length in seconds. */
  window_seconds: z.number().positive().default(60),
  /** Restart-only: a Redis URL to share the counters between replicas (needs the `ioredis` package). */
  redis_url: nullish(z.string().min(1)),
});

/** `limits`: every key is re-read per request except `rate_limit.redis_url` (the store is built at start-up). */
export const LimitsConfigSchema = z.looseObject({
  rate_limit: RateLimitConfigSchema.default(RateLimitConfigSchema.parse({})),
  /** Runs a user may have pending or running at once (null: no cap). */
  max_concurrent_runs_per_user: nullish(z.number().int().min(1)),
  /** Model tokens (input + output) a user may spend per UTC day (null: no quota). */
  daily_token_quota: nullish(z.number().int().min(1)),
});
/** A validated `limits` section. */
export type LimitsConfig = z.infer<typeof LimitsConfigSchema>;
