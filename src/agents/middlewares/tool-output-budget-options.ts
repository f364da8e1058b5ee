// The `tool_output` option schema of ToolOutputBudgetMiddleware (DeerFlow config/tool_output_config.py: same keys
// and defaults), in a zod-only leaf module the app config composes.
import { z } from "zod";

const positive = (what: string) =>
  z.number().int().refine((n) => n > 0, { message: `${what} must be a positive number of characters (to turn the budget off, set tool_output.enabled: false or list the tool in exempt_tools)` });

/**
 * `tool_output`: a tool result longer than `externalize_min_chars` (per tool: `tool_overrides`) is saved under the
 * thread's outputs in `storage_subdir` and replaced by a synopsis with the file's virtual path; when saving fails
 * it is cut to `fallback_head_chars` + `fallback_tail_chars` above `fallback_max_chars`. Budgets are characters.
 * Unlike upstream, a budget of 0 or below is refused at load (upstream reads 0 as "off", which hides a typo).
 */
export const ToolOutputConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  externalize_min_chars: positive("tool_output.externalize_min_chars").default(12_000),
  preview_head_chars: z.number().int().min(0).default(2_000),
  preview_tail_chars: z.number().int().min(0).default(1_000),
  fallback_max_chars: positive("tool_output.fallback_max_chars").default(30_000),
  fallback_head_chars: z.number().int().min(0).default(8_000),
  fallback_tail_chars: z.number().int().min(0).default(3_000),
  storage_subdir: z
    .string()
    .refine((v) => v !== "" && v !== "." && v !== ".." && !/[/\\]/.test(v), { message: "storage_subdir must be a single directory name without path separators" })
    .default(".tool-results"),
  exempt_tools: z.array(z.string()).default(["read_file", "read_file_tool"]),
  tool_overrides: z.record(z.string(), positive("tool_output.tool_overrides value")).default({}),
});
/** A validated `tool_output` section. */
export type ToolOutputConfig = z.infer<typeof ToolOutputConfigSchema>;
