// The `summarization` option schema of SummarizationMiddleware, in a zod-only leaf module the app config schema
// composes without loading the middleware.
import { z } from "zod";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
const ContextSizeSchema = z.looseObject({ type: z.enum(["fraction", "tokens", "messages"]), value: z.number() });

/** `summarization` (DeerFlow `summarization_config.py`): context compaction thresholds. */
export const SummarizationConfigSchema = z.looseObject({
  enabled: z.boolean().default(false),
  model_name: nullish(z.string()),
  trigger: nullish(z.union([ContextSizeSchema, z.array(ContextSizeSchema)])),
  keep: ContextSizeSchema.default({ type: "messages", value: 20 }),
  trim_tokens_to_summarize: nullish(z.number().int()).default(4000),
  summary_prompt: nullish(z.string()),
  skill_file_read_tool_names: z.array(z.string()).default(["read_file", "read", "view", "cat"]),
});

/** A validated `summarization` section (enabled, model_name, trigger, keep, trim_tokens_to_summarize, ...). */
export type SummarizationConfig = z.infer<typeof SummarizationConfigSchema>;
/** A threshold: `{type: "messages" | "tokens" | "fraction", value}`. */
export type ContextSize = SummarizationConfig["keep"];
