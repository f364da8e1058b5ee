// GET /api/usage: the caller's token usage (the ledger in the gateway DB) and where they stand against the limits.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { secondsToUtcMidnight } from "../src/runtime/limits/usage-ledger.js";
import { doc, validInput } from "./openapi.js";

const UsageQuerySchema = z.looseObject({ days: z.coerce.number().int().min(1).max(90).default(1).describe("UTC days to list, today included (1-90)") });

const DailyUsageSchema = z.object({ day: z.string(), input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int(), model_calls: z.number().int() });

/** What `GET /api/usage` answers. */
export const UsageSchema = z.object({
  user_id: z.string(),
  today: DailyUsageSchema,
  daily_token_quota: z.number().int().nullable().describe("Tokens per UTC day (null: no quota)"),
  remaining_tokens: z.number().int().nullable(),
  resets_at: z.string().describe("Next UTC midnight (ISO 8601)"),
  active_runs: z.number().int(),
  max_concurrent_runs: z.number().int().nullable(),
  days: z.array(DailyUsageSchema).describe("Days with usage, newest first"),
});

/** `GET /api/usage?days=N` -> the caller's usage today and over the last N UTC days, and their limits. */
export async function usageRoutes(app: FastifyInstance): Promise<void> {
  app.get("/usage", { schema: doc("usage", "The caller's token usage and limits", { querystring: UsageQuerySchema, response: { 200: UsageSchema } }) }, async (request) => {
    const query = validInput(UsageQuerySchema, request.query, "query");
    const userId = principalOf(request).id;
    const { persistence, quotas, getAppConfig } = app.deerflow;
    const limits = getAppConfig().limits;
    const today = await persistence.usage.get(userId);
    const now = new Date();
    const body: z.infer<typeof UsageSchema> = {
      user_id: userId,
      today,
      daily_token_quota: limits.daily_token_quota ?? null,
      remaining_tokens: limits.daily_token_quota ? Math.max(0, limits.daily_token_quota - today.total_tokens) : null,
      resets_at: new Date(now.getTime() + secondsToUtcMidnight(now) * 1000).toISOString(),
      active_runs: await quotas.activeRuns(userId),
      max_concurrent_runs: limits.max_concurrent_runs_per_user ?? null,
      days: await persistence.usage.recent(userId, query.days, now),
    };
    return body;
  });
}
