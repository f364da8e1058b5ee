// The `token_budget` option schema of TokenBudgetMiddleware, in a zod-only leaf module: the app config schema and
// the subagent overrides compose it without loading the middleware, so config/ never imports back.
import { z } from "zod";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
/** `token_budget` (DeerFlow `token_budget_config.py`): per-run token limits of TokenBudgetMiddleware. */
export const TokenBudgetConfigSchema = z
  .looseObject({
    enabled: z.boolean().default(false),
    max_tokens: z.number().int().min(1000).default(200_000),
    max_input_tokens: nullish(z.number().int().positive()),
    max_output_tokens: nullish(z.number().int().positive()),
    warn_threshold: z.number().min(0).max(1).default(0.8),
    hard_stop_threshold: z.number().min(0).default(1.0),
  })
  .refine((c) => c.hard_stop_threshold >= c.warn_threshold, { message: "hard_stop_threshold must be >= warn_threshold", path: ["hard_stop_threshold"] });

/** The `token_budget` section (enabled, max_tokens, max_input_tokens, max_output_tokens, thresholds). */
export type TokenBudgetConfig = ReturnType<typeof TokenBudgetConfigSchema.parse>;
