// The `tool_progress` option schema (DeerFlow config/tool_progress_config.py: same keys and defaults).
import { z } from "zod";

/**
 * `tool_progress` (off by default, as upstream; ToolProgressMiddleware): counts problem results per tool in a row
 * (an error, a partial result, a result near-identical to one of the tool's last 3); at `stagnation_threshold` the
 * model gets a hint, and a tool failing in a way the model cannot fix is blocked `warn_escalation_count` problems
 * later. `jaccard_similarity_threshold` / `min_word_count_for_similarity` define "near-identical"; `exempt_tools`
 * are never tracked; `max_tracked_threads` bounds the state kept for runs without a run id.
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
  });
/** A validated `tool_progress` section. */
export type ToolProgressConfig = z.infer<typeof ToolProgressConfigSchema>;
