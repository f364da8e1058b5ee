// The `title` option schema of TitleMiddleware, in a zod-only leaf module the app config schema composes without
// loading the middleware.
import { z } from "zod";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
/** `title` (DeerFlow `title_config.py`): automatic thread titles. */
export const TitleConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  max_words: z.number().int().min(1).max(20).default(6),
  max_chars: z.number().int().min(10).max(200).default(60),
  model_name: nullish(z.string()),
  prompt_template: nullish(z.string()),
});

/** The `title` section (enabled, max_words, max_chars, model_name, prompt_template). */
export type TitleConfig = ReturnType<typeof TitleConfigSchema.parse>;
