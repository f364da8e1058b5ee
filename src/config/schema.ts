// Port of DeerFlow config/app_config.py (AppConfig) and its section models, for the sections this gateway reads.
import { z } from "zod";
import { CircuitBreakerConfigSchema, LlmCallConfigSchema } from "../agents/middlewares/llm-error-handling-options.js";
import { LoopDetectionConfigSchema } from "../agents/middlewares/loop-detection-options.js";
import { ReadBeforeWriteConfigSchema } from "../agents/middlewares/read-before-write-options.js";
import { ToolOutputConfigSchema } from "../agents/middlewares/tool-output-budget-options.js";
import { ToolProgressConfigSchema } from "../agents/middlewares/tool-progress-options.js";
import { MemoryConfigSchema } from "../agents/memory/memory-config.js";
import { SummarizationConfigSchema } from "../agents/middlewares/summarization-options.js";
import { TitleConfigSchema } from "../agents/middlewares/title-options.js";
import { TokenBudgetConfigSchema } from "../agents/middlewares/token-budget-options.js";
import { AuthorizationConfigSchema, GuardrailsConfigSchema } from "../agents/middlewares/guardrails-options.js";
import { SandboxConfigSchema } from "../sandbox/sandbox-config.js";
import { LimitsConfigSchema } from "./limits-config.js";
import { SkillEvolutionConfigSchema } from "./skill-evolution-config.js";
import { SubagentsConfigSchema } from "./subagents-config.js";
import { AgentStorageConfigSchema, RunEventsConfigSchema, RunOwnershipConfigSchema } from "./run-sections-config.js";
import { SchedulerConfigSchema } from "./scheduler-config.js";
import { brandAppConfig, hasAppConfigBrand } from "./app-config-brand.js";
import { AuthConfigSchema } from "./auth-schema.js";

export { SubagentsConfigSchema } from "./subagents-config.js";
export type { SubagentsConfig } from "./subagents-config.js";

const nullish = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

// Section schemas owned by the SDK layer (each in a zod-only `*-options.ts` / `*-config.ts` leaf beside the
// middleware or provider that reads it), composed here; importing a middleware itself would close a cycle.
export { LoopDetectionConfigSchema, MemoryConfigSchema, SandboxConfigSchema, SummarizationConfigSchema, TitleConfigSchema, TokenBudgetConfigSchema };
export type { LoopDetectionConfig } from "../agents/middlewares/loop-detection-options.js";

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
  /** Models to continue on when this one fails before its first token (connection, timeout, 429, 5xx). */
  fallbacks: nullish(z.array(z.string().min(1))),
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

/** `tool_search`: deferred MCP tools behind a `tool_search` tool; `auto_promote_top_k` is clamped into 1..5. */
export const ToolSearchConfigSchema = z.looseObject({
  enabled: z.boolean().default(false),
  auto_promote_top_k: z.number().int().default(3).transform((n) => Math.min(5, Math.max(1, n))),
});

/** `skills`: where SKILL.md files live on the host and in the sandbox. */
export const SkillsConfigSchema = z.looseObject({
  path: nullish(z.string()),
  container_path: z.string().default("/mnt/skills"),
  deferred_discovery: z.boolean().default(false),
});

/** `database` (DeerFlow `database_config.py`): the relational store; a file config defaults to SQLite. Restart-only. */
export const DatabaseConfigSchema = z.looseObject({
  backend: z.enum(["memory", "sqlite", "postgres"]).default("sqlite"),
  sqlite_dir: z.string().default(".deer-flow/data"),
  /** PostgreSQL connection string (`url` and DeerFlow's `postgres_url` are synonyms). */
  url: nullish(z.string()),
  postgres_url: nullish(z.string()),
});

/** `stream_bridge`: where run events are buffered between the worker and SSE readers. Restart-only. */
export const StreamBridgeConfigSchema = z.looseObject({
  type: z.enum(["memory", "redis"]).default("memory"),
  queue_maxsize: z.number().int().min(1).default(256),
  /** Redis URL (`url` and DeerFlow's `redis_url` are synonyms). */
  url: nullish(z.string()),
  redis_url: nullish(z.string()),
  max_connections: nullish(z.number().int().positive()),
  stream_ttl_seconds: z.number().int().positive().default(86_400),
  /** Redis only: a process silent for this long (ms) is dead; its runs are marked interrupted, threads idle. */
  lease_ms: z.number().int().min(100).default(10_000),
  /** Redis only: prefix of every key and channel, so several deployments can share one Redis. */
  key_prefix: z.string().min(1).default("deerflow:"),
  /** Times a run whose process died or handed it over is resumed (elsewhere, or by one process on restart) before it is marked `error`; 0 turns resuming off. */
  max_resumes: z.number().int().min(0).default(3),
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
  run_events: "the run event log is opened once at start-up",
  run_ownership: "the process lease is set when the shared run coordination starts",
  scheduler: "the scheduled-task poller is started once at start-up",
} as const;

/** A restart-only top-level field. */
export type StartupOnlyField = keyof typeof STARTUP_ONLY_FIELDS;

const startupOnly = <T extends z.ZodType>(field: StartupOnlyField, schema: T) => schema.describe(`startup-only: ${STARTUP_ONLY_FIELDS[field]}`);

/** Top-level keys this gateway models; any other top-level key is kept as is and warned about once. */
export const KNOWN_TOP_LEVEL_KEYS = [
  "config_version", "log_level", "max_recursion_limit", "models", "tools", "tool_groups", "agents_api", "checkpointer",
  "token_usage", "token_budget", "loop_detection", "tool_search", "sandbox", "skills", "title", "summarization", "memory",
  "subagents", "database", "stream_bridge", "uploads", "safety_finish_reason", "extensions", "limits",
  // The agent-quality middlewares' sections (docs/middlewares.md).
  "llm_call", "circuit_breaker", "tool_output", "read_before_write", "tool_progress",
  // Read by their own modules (auth: src/config/auth-config.ts; suggestions: routes/web-features.ts).
  "auth", "suggestions", "skill_evolution",
  "guardrails", "authorization", "run_events", "agent_storage", "run_ownership",
  // MCP background tasks: src/runtime/mcp-tasks/task-config.ts.
  "mcp_tasks",
  "scheduler",
] as const;

/**
 * The typed `config.yaml` (DeerFlow `AppConfig`). Every section has a default, so a file with only `models:` is
 * valid; unknown top-level keys are retained (loose object).
 */
export const AppConfigSchema = z.looseObject({
  // Any value loads: a non-integer counts as version 0 in the outdated-config warning (config-version.ts).
  config_version: z.unknown().optional(),
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
  limits: LimitsConfigSchema.default(LimitsConfigSchema.parse({})),
  skill_evolution: SkillEvolutionConfigSchema.default(SkillEvolutionConfigSchema.parse({})),
  llm_call: LlmCallConfigSchema.default(LlmCallConfigSchema.parse({})),
  circuit_breaker: CircuitBreakerConfigSchema.default(CircuitBreakerConfigSchema.parse({})),
  tool_output: ToolOutputConfigSchema.default(ToolOutputConfigSchema.parse({})),
  read_before_write: ReadBeforeWriteConfigSchema.default(ReadBeforeWriteConfigSchema.parse({})),
  tool_progress: ToolProgressConfigSchema.default(ToolProgressConfigSchema.parse({})),
  guardrails: GuardrailsConfigSchema.default(GuardrailsConfigSchema.parse({})),
  authorization: AuthorizationConfigSchema.default(AuthorizationConfigSchema.parse({})),
  run_events: startupOnly("run_events", RunEventsConfigSchema.default(RunEventsConfigSchema.parse({}))),
  agent_storage: AgentStorageConfigSchema.default(AgentStorageConfigSchema.parse({})),
  /** Absent (null) keeps `stream_bridge.lease_ms`. */
  run_ownership: startupOnly("run_ownership", nullish(RunOwnershipConfigSchema)),
  /** Scheduled tasks (src/runtime/scheduler/, docs/scheduled-tasks.md). */
  scheduler: startupOnly("scheduler", SchedulerConfigSchema.default(SchedulerConfigSchema.parse({}))),
  /** Local accounts and SSO (auth-schema.ts); validated here so a malformed SSO section stops the start. */
  auth: AuthConfigSchema.default(AuthConfigSchema.parse({})),
});

/** The validated application config. Treat as immutable: `getAppConfig()` hands out the same object until the file changes. */
export type AppConfig = z.infer<typeof AppConfigSchema>;

export { brandAppConfig } from "./app-config-brand.js";

/** True for a config produced by {@link parseAppConfig} / the config loader (DeerFlow's "real AppConfig instance" check). */
export function isAppConfig(value: unknown): value is AppConfig {
  return hasAppConfigBrand(value);
}

/**
 * Parses a plain object as an AppConfig (defaults applied, branded). Used by tests and embedders with
 * `setAppConfig`. @throws ZodError when the object fails the schema.
 */
export function parseAppConfig(data: unknown): AppConfig {
  return brandAppConfig(AppConfigSchema.parse(data)) as AppConfig;
}

/** The first model entry named `name`, or undefined (duplicates: first wins, as DeerFlow `get_model_config`). */
export function getModelConfig(config: AppConfig, name: string): ModelConfig | undefined {
  return config.models.find((m) => m.name === name);
}

/** The first tool entry named `name`, or undefined. */
export function getToolConfig(config: AppConfig, name: string): ToolConfig | undefined {
  return config.tools.find((t) => t.name === name);
}
