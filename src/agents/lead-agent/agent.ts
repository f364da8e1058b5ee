// Port of DeerFlow agents/lead_agent/agent.py: _make_lead_agent (app layer) and make_lead_agent (entry).
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { RunnableConfig } from "@langchain/core/runnables";
import { getAppConfig } from "../../config/app-config.js";
import { loadAgentConfig, loadAgentSoul, validateAgentName, type AgentConfig } from "../../config/agent-config.js";
import { getModelConfig, isAppConfig, type AppConfig } from "../../config/schema.js";
import { NotFoundError } from "../../errors.js";
import { getLogger } from "../../logger.js";
import { createChatModel } from "../../models/create-chat-model.js";
import { createMemoryTools } from "../../tools/builtins/memory-tools.js";
import { createViewImageTool } from "../../tools/builtins/view-image.js";
import { getAvailableTools, type AgentTool } from "../../tools/get-available-tools.js";
import { MemoryUpdateQueue } from "../memory/memory-queue.js";
import { FeatureUnavailableError } from "../chain.js";
import { createDeerflowAgent, type DeerflowAgent } from "../factory.js";
import { buildMiddlewares } from "./middlewares.js";
import { applyPromptTemplate } from "./prompt.js";

/** The merged runtime options: `configurable` overlaid by `context` (context wins), without `app_config`. */
export type RuntimeOptions = Record<string, unknown>;

/** A RunnableConfig as the factory reads it (`context` is LangGraph's runtime context). */
export type LeadAgentConfig = RunnableConfig & { context?: Record<string, unknown> };

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

/**
 * A helper model (summaries, titles) named in config, with thinking off; on failure (unknown name, bad `use:`)
 * logs a warning and returns `fallback`, so a broken helper model never fails the run.
 */
async function auxiliaryModel(name: string | null | undefined, appConfig: AppConfig, fallback: BaseChatModel | null): Promise<BaseChatModel | null> {
  if (!name) return fallback;
  try {
    return await createChatModel(name, { thinkingEnabled: false, appConfig });
  } catch (err) {
    getLogger().warn({ model: name, err: (err as Error).message }, `helper model '${name}' cannot be built; using ${fallback ? "the run's model" : "none"}`);
    return fallback;
  }
}

/**
 * Builds the lead agent for one run from three configuration levels: request (`configurable` + `context`) >
 * custom agent (`agents/<user>/<name>/config.yaml` + `SOUL.md`) > global config. Branches: custom agent
 * (`agent_name` set) or default. Writes the run metadata DeerFlow lists (`agent_name`, `model_name`,
 * `thinking_enabled`, `reasoning_effort`, `is_plan_mode`, `subagent_enabled`, `tool_groups`,
 * `available_skills`) into `config.metadata`. Mirrors DeerFlow `_make_lead_agent`.
 * @throws ValidationError for an invalid `agent_name`. @throws NotFoundError for an unknown custom agent or no models.
 * @throws FeatureUnavailableError for a bootstrap run (`is_bootstrap`), which needs the setup tooling.
 */
export async function _makeLeadAgent(config: LeadAgentConfig, { appConfig }: { appConfig: AppConfig }): Promise<DeerflowAgent> {
  const log = getLogger();
  const options = mergeRuntimeOptions(config);
  const agentName = options.agent_name ? validateAgentName(String(options.agent_name)) : null;
  const userId = String(config.context?.user_id ?? config.configurable?.user_id ?? "default");
  if (options.is_bootstrap) throw new FeatureUnavailableError("Bootstrap runs (is_bootstrap) need the setup_agent tooling, which this release does not include");
  const agentConfig: AgentConfig | null = agentName ? loadAgentConfig(agentName, userId) : null;

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
  const reasoningEffort = resolveRuntimeOption<string | null>(options, "reasoning_effort", agentConfig?.reasoning_effort, null);
  const isPlanMode = Boolean(options.is_plan_mode);
  const subagentEnabled = Boolean(options.subagent_enabled);
  if (subagentEnabled) log.warn("subagents were requested, but the subagent runtime is not part of this release; running without the task tool");

  const model = await createChatModel(modelName, {
    thinkingEnabled,
    reasoningEffort,
    modelOverrides: agentConfig?.model_settings ?? null,
    appConfig,
  });
  let tools = await getAvailableTools({ appConfig, groups: agentConfig?.tool_groups ?? null });
  if (options.non_interactive) tools = tools.filter((t) => t.name !== "ask_clarification");
  if (modelConfig.supports_vision) tools.push(createViewImageTool() as unknown as AgentTool);
  if (appConfig.memory.enabled && appConfig.memory.mode === "tool") {
    const names = new Set(tools.map((t) => t.name));
    for (const t of createMemoryTools({ agentName: agentName ?? "default" })) if (!names.has(t.name)) tools.push(t as unknown as AgentTool);
  }
  const systemPrompt = applyPromptTemplate({ agentName, soul: loadAgentSoul(agentName, userId) });
  const queue = config.context?.memory_queue;
  const middleware = buildMiddlewares({
    appConfig,
    agentName,
    isPlanMode,
    supportsVision: modelConfig.supports_vision,
    summaryModel: appConfig.summarization.enabled ? await auxiliaryModel(appConfig.summarization.model_name, appConfig, model) : null,
    titleModel: appConfig.title.enabled && appConfig.title.model_name ? await auxiliaryModel(appConfig.title.model_name, appConfig, null) : null,
    memoryQueue: queue instanceof MemoryUpdateQueue ? queue : undefined,
  });

  config.metadata = Object.assign(config.metadata ?? {}, {
    agent_name: agentName ?? "default",
    model_name: modelName,
    thinking_enabled: thinkingEnabled,
    reasoning_effort: reasoningEffort,
    is_plan_mode: isPlanMode,
    subagent_enabled: subagentEnabled,
    tool_groups: agentConfig?.tool_groups ?? null,
    available_skills: agentConfig?.skills ? [...agentConfig.skills].sort() : null,
  });
  log.debug({ agent: agentName ?? "default", model: modelName, thinkingEnabled, reasoningEffort }, "lead agent built");
  return createDeerflowAgent(model, tools, {
    middleware,
    systemPrompt,
    name: agentName ?? "lead_agent",
  });
}

/**
 * The LangGraph-style factory `(config) => graph`. Takes `app_config` from the merged runtime config when it is a
 * real AppConfig (context beats configurable; the worker installs one per run), else `getAppConfig()`. Mirrors
 * DeerFlow `make_lead_agent`. @throws whatever {@link _makeLeadAgent} throws.
 */
export function makeLeadAgent(config: LeadAgentConfig): Promise<DeerflowAgent> {
  const candidate = config.context?.app_config ?? config.configurable?.app_config;
  const appConfig = isAppConfig(candidate) ? candidate : getAppConfig();
  return _makeLeadAgent(config, { appConfig });
}
