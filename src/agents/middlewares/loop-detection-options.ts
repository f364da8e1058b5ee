// The `loop_detection` option schema of LoopDetectionMiddleware, in a zod-only leaf module: the app config schema
// composes it without loading the middleware (and the run context behind it), so config/ never imports back.
import { z } from "zod";

/** `loop_detection` (DeerFlow `loop_detection_config.py`): thresholds of LoopDetectionMiddleware. */
export const LoopDetectionConfigSchema = z
  .object({
    enabled: z.boolean().default(true),
    warn_threshold: z.number().int().min(1).default(3),
    hard_limit: z.number().int().min(1).default(5),
    window_size: z.number().int().min(1).default(20),
    max_tracked_threads: z.number().int().min(1).default(100),
    tool_freq_warn: z.number().int().min(1).default(30),
    tool_freq_hard_limit: z.number().int().min(1).default(50),
    tool_freq_overrides: z.record(z.string(), z.tuple([z.number().int().min(1), z.number().int().min(1)])).default({}),
  })
  .refine((c) => c.hard_limit >= c.warn_threshold, { message: "hard_limit must be >= warn_threshold", path: ["hard_limit"] })
  .refine((c) => c.tool_freq_hard_limit >= c.tool_freq_warn, {
    message: "tool_freq_hard_limit must be >= tool_freq_warn",
    path: ["tool_freq_hard_limit"],
  });
/** A validated loop-detection section. */
export type LoopDetectionConfig = z.infer<typeof LoopDetectionConfigSchema>;
