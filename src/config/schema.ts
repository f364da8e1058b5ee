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

/** `tool_search`: deferred MCP tools behind a `tool_search` tool; `auto_promote_top_k` is clamped into 1..5. */
export const ToolSearchConfigSchema = z.looseObject({
  enabled: z.boolean().default(false),
  auto_promote_top_k: z.number().int().default(3).transform((n) => Math.min(5, Math.max(1, n))),
});

/** `sandbox` (DeerFlow `sandbox_config.py`): provider and tool limits. Restart-only. */
export const SandboxConfigSchema = z.looseObject({
  use: z.string().default("deerflow.sandbox.local:LocalSandboxProvider"),
  allow_host_bash: z.boolean().default(false),
  mounts: z.array(z.looseObject({ host_path: z.string(), container_path: z.string(), read_only: z.boolean().default(false) })).default([]),
  bash_output_max_chars: z.number().int().min(0).default(20_000),
  read_file_output_max_chars: z.number().int().min(0).default(50_000),
  ls_output_max_chars: z.number().int().min(0).default(20_000),
  bash_command_timeout: z.number().positive().default(600),
});

/** `skills`: where SKILL.md files live on the host and in the sandbox. */
export const SkillsConfigSchema = z.looseObject({
  path: nullish(z.string()),
  container_path: z.string().default("/mnt/skills"),
  deferred_discovery: z.boolean().default(false),
});

/** `title` (DeerFlow `title_config.py`): automatic thread titles. */
export const TitleConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  max_words: z.number().int().min(1).max(20).default(6),
  max_chars: z.number().int().min(10).max(200).default(60),
  model_name: nullish(z.string()),
  prompt_template: nullish(z.string()),
});

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

/** `memory` (DeerFlow `memory_config.py`): long-term memory; legacy extra keys are tolerated. */
export const MemoryConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  mode: z.enum(["middleware", "tool"]).default("middleware"),
  injection_enabled: z.boolean().default(true),
  shutdown_flush_timeout_seconds: z.number().min(1).max(300).default(30),
  manager_class: z.string().default("deermem"),
  backend_config: z.record(z.string(), z.unknown()).default({}),
});

/** `subagents`: limits of the `task` tool. */
export const SubagentsConfigSchema = z.looseObject({
  max_total_per_run: z.number().int().min(1).max(50).default(6),
  max_concurrent: z.number().int().min(1).max(4).default(3),
});

/** `database` (DeerFlow `database_config.py`): the relational store; a file config defaults to SQLite. Restart-only. */
export const DatabaseConfigSchema = z.looseObject({
  backend: z.enum(["memory", "sqlite", "postgres"]).default("sqlite"),
  sqlite_dir: z.string().default(".deer-flow/data"),
  postgres_url: nullish(z.string()),
});

/** `stream_bridge`: where run events are buffered between the worker and SSE readers. Restart-only. */
export const StreamBridgeConfigSchema = z.looseObject({
  type: z.enum(["memory", "redis"]).default("memory"),
  queue_maxsize: z.number().int().min(1).default(256),
  redis_url: nullish(z.string()),
  max_connections: nullish(z.number().int().positive()),
  stream_ttl_seconds: z.number().int().positive().default(86_400),
});

/** `uploads`: limits of `POST /api/threads/{id}/uploads` (bytes). */
export const UploadsConfigSchema = z.looseObject({
  max_files: z.number().int().min(1).default(10),
  max_file_size: z.number().int().min(1).default(50 * 1024 * 1024),
  max_total_size: z.number().int().min(1).default(100 * 1024 * 1024),
  auto_convert_documents: z.boolean().default(false),
});

/** `safety_finish_reason`: turn provider safety stops into a clean termination. */
export const SafetyFinishReasonConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  detectors: nullish(z.array(z.looseObject({ use: z.string(), config: z.record(z.string(), z.unknown()).optional() }))),
});

/**
 * Fields that take effect only at start-up, each with its reason (DeerFlow `reload_boundary.py`). Their schema
 * description starts with `startup-only:`; a test pins both directions. On reload a change to one is logged and
 * the running value is kept.
 */
export const STARTUP_ONLY_FIELDS = {
  log_level: "the logger is created once at start-up",
  checkpointer: "the checkpoint database is opened once at start-up",
  database: "the thread/run database is opened once at start-up",
  stream_bridge: "the stream bridge holds live runs and is created once at start-up",
  sandbox: "the sandbox provider owns per-thread resources and is created once at start-up",
} as const;

/** A restart-only top-level field. */
export type StartupOnlyField = keyof typeof STARTUP_ONLY_FIELDS;

const startupOnly = <T extends z.ZodType>(field: StartupOnlyField, schema: T) => schema.describe(`startup-only: ${STARTUP_ONLY_FIELDS[field]}`);

/** Top-level keys this gateway models; any other top-level key is kept as is and warned about once. */
export const KNOWN_TOP_LEVEL_KEYS = [
  "config_version", "log_level", "max_recursion_limit", "models", "tools", "tool_groups", "agents_api", "checkpointer",
  "token_usage", "token_budget", "loop_detection", "tool_search", "sandbox", "skills", "title", "summarization", "memory",
  "subagents", "database", "stream_bridge", "uploads", "safety_finish_reason", "extensions",
] as const;

/**
 * The typed `config.yaml` (DeerFlow `AppConfig`). Every section has a default, so a file with only `models:` is
 * valid; unknown top-level keys are retained (loose object).
 */
export const AppConfigSchema = z.looseObject({
  config_version: nullish(z.number().int()),
  log_level: startupOnly("log_level", z.string().default("info")),
  max_recursion_limit: z.number().int().min(1).default(1000),
  models: z.array(ModelConfigSchema).default([]),
  tools: z.array(ToolConfigSchema).default([]),
  tool_groups: z.array(ToolGroupConfigSchema).default([]),
  agents_api: AgentsApiConfigSchema.default({ enabled: false }),
  checkpointer: startupOnly("checkpointer", nullish(CheckpointerConfigSchema)),
  token_usage: TokenUsageConfigSchema.default({ enabled: true }),
  token_budget: TokenBudgetConfigSchema.default(TokenBudgetConfigSchema.parse({})),
  loop_detection: LoopDetectionConfigSchema.default(LoopDetectionConfigSchema.parse({})),
  tool_search: ToolSearchConfigSchema.default(ToolSearchConfigSchema.parse({})),
  sandbox: startupOnly("sandbox", SandboxConfigSchema.default(SandboxConfigSchema.parse({}))),
  skills: SkillsConfigSchema.default(SkillsConfigSchema.parse({})),
  title: TitleConfigSchema.default(TitleConfigSchema.parse({})),
  summarization: SummarizationConfigSchema.default(SummarizationConfigSchema.parse({})),
  memory: MemoryConfigSchema.default(MemoryConfigSchema.parse({})),
  subagents: SubagentsConfigSchema.default(SubagentsConfigSchema.parse({})),
  database: startupOnly("database", DatabaseConfigSchema.default(DatabaseConfigSchema.parse({}))),
  stream_bridge: startupOnly("stream_bridge", nullish(StreamBridgeConfigSchema)),
  uploads: UploadsConfigSchema.default(UploadsConfigSchema.parse({})),
  safety_finish_reason: SafetyFinishReasonConfigSchema.default(SafetyFinishReasonConfigSchema.parse({})),
  extensions: nullish(z.record(z.string(), z.unknown())),
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
