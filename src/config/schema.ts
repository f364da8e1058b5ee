// Port of DeerFlow config/app_config.py (AppConfig) and its section models, for the sections this gateway reads.
import { z } from "zod";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

/**
 * One chat model entry (DeerFlow `ModelConfig`). Unknown keys (`api_key`, `base_url`, `max_tokens`, `temperature`,
 * `timeout`, `extra_body`, ...) are kept and forwarded to the provider constructor by `createChatModel`.
 */
export const ModelConfigSchema = z.looseObject({
  name: z.string().min(1),
  use: z.string().min(1),
  model: z.string().min(1),
  display_name: nullish(z.string()),
  description: nullish(z.string()),
  use_responses_api: nullish(z.boolean()),
  output_version: nullish(z.string()),
  supports_thinking: z.boolean().default(false),
  supports_reasoning_effort: z.boolean().default(false),
  when_thinking_enabled: nullish(z.record(z.string(), z.unknown())),
  when_thinking_disabled: nullish(z.record(z.string(), z.unknown())),
  thinking: nullish(z.record(z.string(), z.unknown())),
  supports_vision: z.boolean().default(false),
  context_window: nullish(z.number().int().positive()),
  stream_chunk_timeout: nullish(z.number().positive()),
});
/** A validated model entry. */
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/** A configured tool (`use:` is `module:export` of a ready tool object); extra keys are read by the tool. */
export const ToolConfigSchema = z.looseObject({ name: z.string().min(1), group: z.string().min(1), use: z.string().min(1) });
/** A validated tool entry. */
export type ToolConfig = z.infer<typeof ToolConfigSchema>;

/** A tool group (`{name}` plus free extras). */
export const ToolGroupConfigSchema = z.looseObject({ name: z.string().min(1) });
/** A validated tool group entry. */
export type ToolGroupConfig = z.infer<typeof ToolGroupConfigSchema>;

/** `agents_api`: gate of the `/api/agents` routes (DeerFlow `agents_api_config.py`). */
export const AgentsApiConfigSchema = z.object({ enabled: z.boolean().default(false) });

/** `checkpointer`: where LangGraph checkpoints live. Absent means SQLite under `DEER_FLOW_HOME`. Restart-only. */
export const CheckpointerConfigSchema = z.object({
  type: z.enum(["memory", "sqlite", "postgres"]),
  /** SQLite file path (relative to `DEER_FLOW_HOME`) or a PostgreSQL connection string. */
  connection_string: nullish(z.string()),
});
/** A validated checkpointer section. */
export type CheckpointerConfig = z.infer<typeof CheckpointerConfigSchema>;

/** `token_usage`: whether token accounting is reported (`GET /api/models` shows the flag). */
export const TokenUsageConfigSchema = z.looseObject({ enabled: z.boolean().default(true) });

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

/** Top-level keys this gateway models; any other top-level key is kept as is and warned about once. */
export const KNOWN_TOP_LEVEL_KEYS = [
  "config_version",
  "log_level",
  "max_recursion_limit",
  "models",
  "tools",
  "tool_groups",
  "agents_api",
  "checkpointer",
  "token_usage",
  "loop_detection",
] as const;

/**
 * The typed `config.yaml` (DeerFlow `AppConfig`). Every section has a default, so a file with only `models:` is
 * valid; unknown top-level keys are retained (loose object).
 */
export const AppConfigSchema = z.looseObject({
  config_version: nullish(z.number().int()),
  log_level: z.string().default("info"),
  max_recursion_limit: z.number().int().min(1).default(1000),
  models: z.array(ModelConfigSchema).default([]),
  tools: z.array(ToolConfigSchema).default([]),
  tool_groups: z.array(ToolGroupConfigSchema).default([]),
  agents_api: AgentsApiConfigSchema.default({ enabled: false }),
  checkpointer: nullish(CheckpointerConfigSchema),
  token_usage: TokenUsageConfigSchema.default({ enabled: true }),
  loop_detection: LoopDetectionConfigSchema.default(LoopDetectionConfigSchema.parse({})),
});

/** The validated application config. Treat as immutable: `getAppConfig()` hands out the same object until the file changes. */
export type AppConfig = z.infer<typeof AppConfigSchema>;

const APP_CONFIG_BRAND = Symbol.for("deerflow-gateway.AppConfig");

/** Marks a validated config object so {@link isAppConfig} can recognise it (non-enumerable, never serialised). */
export function brandAppConfig(config: AppConfig): AppConfig {
  Object.defineProperty(config, APP_CONFIG_BRAND, { value: true, enumerable: false });
  return config;
}

/** True for a config produced by `parseAppConfig` / the config loader (DeerFlow's "real AppConfig instance" check). */
export function isAppConfig(value: unknown): value is AppConfig {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[APP_CONFIG_BRAND] === true;
}

/**
 * Parses a plain object as an AppConfig (defaults applied, branded). Used by tests and embedders with
 * `setAppConfig`. @throws ZodError when the object fails the schema.
 */
export function parseAppConfig(data: unknown): AppConfig {
  return brandAppConfig(AppConfigSchema.parse(data));
}

/** The first model entry named `name`, or undefined (duplicates: first wins, as DeerFlow `get_model_config`). */
export function getModelConfig(config: AppConfig, name: string): ModelConfig | undefined {
  return config.models.find((m) => m.name === name);
}

/** The first tool entry named `name`, or undefined. */
export function getToolConfig(config: AppConfig, name: string): ToolConfig | undefined {
  return config.tools.find((t) => t.name === name);
}
