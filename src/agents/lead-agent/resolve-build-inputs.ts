// The per-call half of DeerFlow's _make_lead_agent (agents/lead_agent/agent.py): everything a lead-agent build
// resolves from the request, the custom agent's files and the global config before anything is compiled, and the
// signature under which the compile is shared (build-cache.ts). Read per call, so a changed file counts at once.
import type { RunnableConfig } from "@langchain/core/runnables";
import { loadAgentSoul, loadCustomAgent, validateAgentName, type AgentConfig } from "../../config/agent-config.js";
import type { ExtensionsConfig } from "../../config/extensions-config.js";
import { getAgentsDir, getRuntimeHome, getSkillsRoot } from "../../config/paths.js";
import { getModelConfig, type AppConfig, type ModelConfig } from "../../config/schema.js";
import { NotFoundError } from "../../errors.js";
import { getLogger } from "../../logger.js";
import type { Skill } from "../../skills/parse-skill.js";
import { skillStorageFor } from "../../skills/skill-storage.js";
import { readExtensionsForBuild } from "../../tools/read-extensions.js";
import { runContextOf, type RunContextView, type SubagentMarker } from "../run-context.js";
import { identityOf } from "./build-cache.js";

/** The merged runtime options: `configurable` overlaid by `context` (context wins), without `app_config`. */
export type RuntimeOptions = Record<string, unknown>;

/** A RunnableConfig as the factory reads it (`context` is LangGraph's runtime context). */
export type LeadAgentConfig = RunnableConfig & { context?: Record<string, unknown> };

/** Which kind of lead agent a call builds (see `_makeLeadAgent`). */
export type LeadBranch = "bootstrap" | "custom" | "default" | "subagent";

/**
 * Everything one build resolved, from the three levels request > custom agent > global config. One object per
 * call; the compile and the run metadata read only this (and the AppConfig).
 */
export interface BuildInputs {
  /** The request's options (`configurable` + `context`). */
  options: RuntimeOptions;
  /** The run context the call carries (user, thread, memory manager, subagent marker). */
  runContext: RunContextView;
  /** The subagent marker of a `task` tool build; undefined for a lead agent. */
  subagent: SubagentMarker | undefined;
  branch: LeadBranch;
  isBootstrap: boolean;
  /** The validated `agent_name` (also set for bootstrap: the agent being created); null for the default agent. */
  agentName: string | null;
  /** The custom agent's config.yaml (custom branch only). */
  agentConfig: AgentConfig | null;
  /** SOUL.md text: the custom agent's, else the user's global one; null for a subagent. */
  soul: string | null;
  /** The model name the request or agent asked for, as given (null: none asked). */
  requested: string | null;
  /** The configured model the build uses, and its config. */
  modelName: string;
  modelConfig: ModelConfig;
  thinkingEnabled: boolean;
  reasoningEffort: string | null;
  /** The custom agent's sampling overrides (none for bootstrap). */
  modelOverrides: AgentConfig["model_settings"] | null;
  isPlanMode: boolean;
  subagentEnabled: boolean;
  maxConcurrentSubagents: number;
  maxTotalSubagents: number;
  nonInteractive: boolean;
  channelName: string | null;
  /** extensions_config.json as read for this build. */
  extensions: ExtensionsConfig;
  /** Every skill the run's user can see (public plus their custom ones), enabled state included. */
  skills: Skill[];
  /** Skill names the agent may use: null all, an empty set none. */
  allowlist: Set<string> | null;
}

/** Merges `configurable` and `context`, context winning on a clash. Mirrors DeerFlow `agent.py:119-125`. */
export function mergeRuntimeOptions(config: LeadAgentConfig): RuntimeOptions {
  const merged: RuntimeOptions = { ...(config.configurable ?? {}) };
  if (config.context && typeof config.context === "object") Object.assign(merged, config.context);
  delete merged.app_config;
  return merged;
}

/**
 * `request > agent > default`, judged by key presence: a key present in the request wins even when falsy.
 * Mirrors DeerFlow `_resolve_runtime_option`.
 */
export function resolveRuntimeOption<T>(options: RuntimeOptions, key: string, agentValue: T | null | undefined, fallback: T): T {
  if (Object.prototype.hasOwnProperty.call(options, key)) return options[key] as T;
  if (agentValue !== null && agentValue !== undefined) return agentValue;
  return fallback;
}

/**
 * The model to build: `requested` when configured, else `models[0]` (an unknown name logs "Model '<x>' not found
 * in config; fallback to default model '<y>'."). Mirrors DeerFlow `_resolve_model_name`.
 * @throws NotFoundError "No chat models are configured..." when the config has no models.
 */
export function resolveModelName(requested: string | null | undefined, appConfig: AppConfig): string {
  const fallback = appConfig.models[0]?.name;
  if (!fallback) throw new NotFoundError("No chat models are configured. Please configure at least one model in config.yaml.");
  if (!requested) return fallback;
  if (getModelConfig(appConfig, requested)) return requested;
  getLogger().warn({ requested, fallback }, `Model '${requested}' not found in config; fallback to default model '${fallback}'.`);
  return fallback;
}

/** A number option from the request when it is finite, else `fallback`. */
const finite = (v: unknown, fallback: number): number => (typeof v === "number" && Number.isFinite(v) ? v : fallback);

/**
 * Resolves one build's inputs, in DeerFlow's order: options and branch, the custom agent (config.yaml and SOUL.md
 * in one read of the pair, so an update racing this call cannot mix them), model and thinking, the subagent
 * limits, extensions and the user's skills, the skill allowlist and the soul. Logs a warning for thinking asked of
 * a model without it and for allowed skills that are not installed.
 * @throws ValidationError for an invalid `agent_name`. @throws NotFoundError for an unknown custom agent or no
 *   models. @throws ConfigError for an unreadable agent config.
 */
export function resolveBuildInputs(config: LeadAgentConfig, appConfig: AppConfig): BuildInputs {
  const log = getLogger();
  const options = mergeRuntimeOptions(config);
  const agentName = options.agent_name ? validateAgentName(String(options.agent_name)) : null;
  // Read once: the run context view parses the subagent marker.
  const runContext = runContextOf(config);
  const { userId, subagent } = runContext;
  const isBootstrap = Boolean(options.is_bootstrap) && !subagent;
  const branch: LeadBranch = subagent ? "subagent" : isBootstrap ? "bootstrap" : agentName ? "custom" : "default";
  const customAgent = branch === "custom" ? loadCustomAgent(agentName!, userId) : null;
  const agentConfig: AgentConfig | null = customAgent?.config ?? null;

  const requested = (options.model_name || options.model || agentConfig?.model || null) as string | null;
  const modelName = resolveModelName(requested, appConfig);
  const modelConfig = getModelConfig(appConfig, modelName)!;
  let thinkingEnabled = Boolean(resolveRuntimeOption(options, "thinking_enabled", agentConfig?.thinking_enabled, true));
  if (thinkingEnabled && !modelConfig.supports_thinking) {
    // Thinking defaults to on, so only an explicit request for it is worth a warning on every run.
    const explicit = Object.prototype.hasOwnProperty.call(options, "thinking_enabled") || agentConfig?.thinking_enabled === true;
    log[explicit ? "warn" : "debug"]({ model: modelName }, `Thinking mode is enabled but model '${modelName}' does not support it; fallback to non-thinking mode.`);
    thinkingEnabled = false;
  }

  const extensions = readExtensionsForBuild();
  // The run's user sees the public skills plus their own custom ones (legacy shared ones while they have none).
  const skills = skillStorageFor(appConfig.skills, userId).loadSkills(extensions);
  const allowlist = skillAllowlist(isBootstrap, subagent, agentConfig);
  const missing = [...(allowlist ?? [])].filter((name) => !skills.some((s) => s.name === name));
  if (missing.length) log.warn({ agent: agentName ?? "default", skills: missing }, `skill(s) ${missing.map((m) => `'${m}'`).join(", ")} allowed for agent '${agentName ?? "default"}' are not installed; ignoring them`);
  return {
    options,
    runContext,
    subagent,
    branch,
    isBootstrap,
    agentName,
    agentConfig,
    soul: subagent ? null : customAgent ? customAgent.soul : loadAgentSoul(null, userId),
    requested,
    modelName,
    modelConfig,
    thinkingEnabled,
    reasoningEffort: isBootstrap ? null : resolveRuntimeOption<string | null>(options, "reasoning_effort", agentConfig?.reasoning_effort, null),
    modelOverrides: isBootstrap ? null : (agentConfig?.model_settings ?? null),
    isPlanMode: Boolean(options.is_plan_mode),
    subagentEnabled: Boolean(options.subagent_enabled) && !subagent,
    maxConcurrentSubagents: finite(options.max_concurrent_subagents, appConfig.subagents.max_concurrent),
    maxTotalSubagents: finite(options.max_total_subagents, appConfig.subagents.max_total_per_run),
    nonInteractive: Boolean(options.non_interactive),
    channelName: typeof options.channel_name === "string" ? options.channel_name : null,
    extensions,
    skills,
    allowlist,
  };
}

/** The skills an agent may use: `{bootstrap}` for bootstrap, the subagent's or custom agent's list, else null (all). */
function skillAllowlist(isBootstrap: boolean, subagent: SubagentMarker | undefined, agentConfig: AgentConfig | null): Set<string> | null {
  if (isBootstrap) return new Set(["bootstrap"]);
  if (subagent) return subagent.available_skills && new Set(subagent.available_skills);
  return agentConfig?.skills != null ? new Set(agentConfig.skills) : null;
}

/**
 * The key under which a build's compiled graph is shared: everything the graph depends on. Files are compared by
 * content (agent config, SOUL.md, skills' front matter, extensions), the global config by version (a new AppConfig
 * per content change), paths as resolved now (the home can move between embeds and tests). The user is part of it,
 * so no graph is shared between users even when their inputs match.
 */
export function buildSignature(inputs: BuildInputs, appConfig: AppConfig): string {
  return JSON.stringify([
    identityOf(appConfig),
    identityOf(inputs.runContext.memoryManager),
    getRuntimeHome(),
    getAgentsDir(),
    getSkillsRoot(appConfig.skills),
    inputs.runContext.userId,
    // Tool authorization binds tools by role: a role change must not reuse another role's build.
    inputs.runContext.userRole ?? null,
    inputs.branch,
    inputs.agentName,
    inputs.subagent ?? null,
    inputs.agentConfig,
    inputs.soul,
    inputs.modelName,
    inputs.thinkingEnabled,
    inputs.reasoningEffort,
    inputs.isPlanMode,
    inputs.subagentEnabled,
    inputs.maxConcurrentSubagents,
    inputs.maxTotalSubagents,
    inputs.nonInteractive,
    inputs.channelName,
    inputs.extensions,
    inputs.skills,
  ]);
}
