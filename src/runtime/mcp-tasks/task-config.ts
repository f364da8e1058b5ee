// The `mcp_tasks:` section of config.yaml (DeerFlow's MCP background-task runtime), read by this module only.
import { z } from "zod";
import type { AppConfig } from "../../config/schema.js";

/** `mcp_tasks:` with upstream's keys and defaults (seconds, bytes, characters). Unknown keys are refused. */
export const McpTasksConfigSchema = z.strictObject({
  /** Master switch: the task tools, the poller and the web app's background-tasks panel. */
  enabled: z.boolean().default(false),
  /** Scan interval and default time between two status calls of one task. */
  poll_interval_seconds: z.number().positive().default(5),
  /** How long a process holds a claimed task (a status call or a delivery step) before another may take it over. */
  lease_seconds: z.number().positive().default(120),
  /** Status calls started per scan. */
  max_concurrent_polls: z.number().int().positive().default(8),
  /** Cap of the exponential backoff after failed status calls. */
  max_poll_backoff_seconds: z.number().positive().default(300),
  /** Minimum poll interval while a task waits for input. */
  input_required_poll_interval_seconds: z.number().positive().default(60),
  /** Consecutive failed status calls after which the API reports `tracking_degraded`. */
  tracking_degraded_after_errors: z.number().int().positive().default(3),
  /** A result whose JSON is larger is kept as a preview only (`result_truncated`). */
  max_result_bytes: z.number().int().positive().default(65_536),
  /** Characters of the preview kept for an oversized result. */
  result_preview_max_chars: z.number().int().positive().default(2000),
});
/** A validated `mcp_tasks` section. */
export type McpTasksConfig = z.infer<typeof McpTasksConfigSchema>;

/**
 * The `mcp_tasks` section of a loaded config (defaults when absent).
 * @throws Error "mcp_tasks: <key>: <message>" for an invalid section.
 */
export function mcpTasksConfig(appConfig: AppConfig): McpTasksConfig {
  const parsed = McpTasksConfigSchema.safeParse((appConfig as Record<string, unknown>).mcp_tasks ?? {});
  if (!parsed.success) throw new Error(`mcp_tasks: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(section)"}: ${i.message}`).join("; ")}`);
  return parsed.data;
}
