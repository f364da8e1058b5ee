// The `tool_progress` option schema (DeerFlow config/tool_progress_config.py: same keys and defaults).
import { z } from "zod";

/**
 * `tool_progress` (off by default, as upstream): counts problem tool calls in a row (an exact repeat, a result
 * near-identical to the previous one of the tool, an error); at `stagnation_threshold` the model is told, and
 * `warn_escalation_count` more problems later it is told to stop and change approach. Only `enabled: false` is
 * accepted for now.
 */
export const ToolProgressConfigSchema = z
  .looseObject({
  enabled: z.boolean().default(false),
  stagnation_threshold: z.number().int().min(1).default(3),
  warn_escalation_count: z.number().int().min(1).default(2),
  inject_assessment: z.boolean().default(true),
  jaccard_similarity_threshold: z.number().min(0).max(1).default(0.8),
  min_word_count_for_similarity: z.number().int().default(10),
  exempt_tools: z.array(z.string()).default(["ask_clarification", "write_todos", "present_files", "task"]),
  max_tracked_threads: z.number().int().min(1).default(100),
  })
  // Its middleware is not built yet: turning it on stops the start instead of being silently ignored.
  .refine((c) => !c.enabled, { message: "tool_progress.enabled: true is not offered by this gateway yet (ToolProgressMiddleware is not built); set it to false", path: ["enabled"] });
/** A validated `tool_progress` section. */
export type ToolProgressConfig = z.infer<typeof ToolProgressConfigSchema>;
