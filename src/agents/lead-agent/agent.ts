// Port of DeerFlow agents/lead_agent/agent.py: _make_lead_agent (app layer) and make_lead_agent (entry).
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { RunnableConfig } from "@langchain/core/runnables";
import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { getAppConfig } from "../../config/app-config.js";
import { loadAgentSoul, loadCustomAgent, validateAgentName, type AgentConfig } from "../../config/agent-config.js";
import { getModelConfig, type AppConfig } from "../../config/schema.js";
import { NotFoundError } from "../../errors.js";
import { getLogger } from "../../logger.js";
import { createChatModel } from "../../models/create-chat-model.js";
import { ModelFallbackMiddleware } from "../middlewares/model-fallback.js";
import { filterSkills } from "../../skills/load-skills.js";
import { skillStorageFor } from "../../skills/skill-storage.js";
import { getSkillsPromptSection } from "../../skills/skills-prompt.js";
import { deferredToolsSection } from "../../tools/builtins/tool-search.js";
import { readExtensionsForBuild } from "../../tools/read-extensions.js";
import { createDeerflowAgent, type DeerflowAgent } from "../factory.js";
import { getAgentsDir, getRuntimeHome, getSkillsRoot } from "../../config/paths.js";
import { identityOf, sharedBuild } from "./build-cache.js";
import { ThreadStateFields } from "../thread-state.js";
import { buildMiddlewares } from "./middlewares.js";
import { applyPromptTemplate } from "./prompt.js";
import { LeadSubagentRuntime } from "./subagent-runtime.js";
import { filterSubagentTools, getSubagentType, getSubagentTypes } from "./subagent-types.js";
import { assembleLeadTools } from "./tools.js";
import { buildTracingCallbacks } from "./tracing.js";
import { runContextOf } from "../run-context.js";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";

/** The merged runtime options: `configurable` overlaid by `context` (context wins), without `app_config`. */
export type RuntimeOptions = Record<string, unknown>;

/** A RunnableConfig as the factory reads it (`context` is LangGraph's runtime context). */
export type LeadAgentConfig = RunnableConfig & { context?: Record<string, unknown> };

/** The run metadata DeerFlow's `_make_lead_agent` records: what the build resolved from the three levels. */
export interface LeadAgentMetadata {
  agent_name: string;
  model_name: string;
  thinking_enabled: boolean;
  reasoning_effort: string | null;
  is_plan_mode: boolean;
  subagent_enabled: boolean;
  tool_groups: string[] | null;
  available_skills: string[] | null;
}

/** The compiled graph of a lead agent (what langchain's `createAgent` compiles; DeerFlow's `create_agent` result). */
export type LeadAgentGraph = DeerflowAgent["graph"];

/**
 * A built lead agent: this request's own copy of the compiled graph (its `checkpointer` and config are the
 * caller's to set), and what the build resolved: run metadata and the tracing callbacks for the graph root.
 */
export type LeadAgent = LeadAgentGraph & { resolved: { metadata: LeadAgentMetadata; callbacks: BaseCallbackHandler[] } };

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

/** ThreadState plus `created_agent_name`, which `setup_agent` writes in a bootstrap run. */
const BootstrapState = new StateSchema({
  ...ThreadStateFields,
  created_agent_name: new ReducedValue(z.string().nullable().optional().default(null), {
    inputSchema: z.string().nullable().optional(),
    reducer: (current: string | null | undefined, next: string | null | undefined) => (next === undefined ? (current ?? null) : next),
  }),
});

/**
 * Builds the lead agent for one run from three configuration levels: request (`configurable` + `context`) >
 * custom agent (`agents/<user>/<name>/config.yaml` + `SOUL.md`) > global config. Branches:
 * - **bootstrap** (`is_bootstrap`): the agent config is not loaded; the skill allowlist is `{bootstrap}`; tools are
 *   the ungrouped available tools plus `setup_agent` (never `update_agent`); the model gets no reasoning effort and
 *   no overrides; the prompt has no agent name (DeerFlow 2.0, the global SOUL.md); memory and dynamic context are
 *   still scoped to `agent_name`, the agent being created;
 * - **custom** (`agent_name`): its config and SOUL.md; `update_agent` unless the channel is a webhook (`github`);
 * - **default**; and the internal **subagent** build of the `task` tool (`context.__subagent`).
 * Skills are discovered per build for the run's user (`skills/public`, the user's custom skills under
 * `DEER_FLOW_HOME/users/<user>/skills/custom`; enabled state from extensions_config.json and the user's skill
 * states, re-read per build) and filtered by the allowlist (null all, [] none, list those).
 *
 * Everything above is resolved per call; the compile (model, tools, middlewares, prompt, `createAgent`) is shared
 * by every call whose resolved inputs are the same (see the signature below and `build-cache.ts`), and each call
 * returns its own copy of the compiled graph (`withConfig`), so setting its `checkpointer` touches no other run.
 * Returns that compiled graph (as DeerFlow's `create_agent` result is) with what the build resolved in
 * `agent.resolved` (the input config is not touched): the run metadata DeerFlow lists
 * (`agent_name`, `model_name`, `thinking_enabled`, `reasoning_effort`, `is_plan_mode`, `subagent_enabled`,
 * `tool_groups`, `available_skills`, and `model_substitution: {requested, used, reason}` when an unknown model name
 * fell back to the default) and the tracing callbacks (LangSmith when configured) for the graph root.
 * Mirrors DeerFlow `_make_lead_agent` (which writes them into `config["metadata"]` / `config["callbacks"]`).
 * @example
 * ```ts
 * const agent = await _makeLeadAgent({ context: { thread_id: "t1", user_id: "default", agent_name: "research-bot" } }, { appConfig });
 * agent.resolved.metadata.model_name; // the model request > agent > default resolved to
 * for await (const chunk of await agent.stream({ messages: [{ role: "user", content: "hi" }] }, { context: { thread_id: "t1" } })) { ... }
 * ```
 * @throws ValidationError for an invalid `agent_name`. @throws NotFoundError for an unknown custom agent or no
 *   models. @throws ConfigError for an unreadable agent config. @throws UseResolutionError for a model whose `use:`
 *   cannot be resolved.
 */
export async function _makeLeadAgent(config: LeadAgentConfig, { appConfig }: { appConfig: AppConfig }): Promise<LeadAgent> {
  const log = getLogger();
  const options = mergeRuntimeOptions(config);
  const agentName = options.agent_name ? validateAgentName(String(options.agent_name)) : null;
  // Read once: the run context view parses the subagent marker.
  const runContext = runContextOf(config);
  const { userId, subagent } = runContext;
  const isBootstrap = Boolean(options.is_bootstrap) && !subagent;
  const branch = subagent ? "subagent" : isBootstrap ? "bootstrap" : agentName ? "custom" : "default";
  // A custom agent's config and soul come from one read of the pair, so an update racing this run cannot mix them.
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
  const reasoningEffort = isBootstrap ? null : resolveRuntimeOption<string | null>(options, "reasoning_effort", agentConfig?.reasoning_effort, null);
  const isPlanMode = Boolean(options.is_plan_mode);
  const subagentEnabled = Boolean(options.subagent_enabled) && !subagent;
  const finite = (v: unknown, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : fallback);
  const maxConcurrentSubagents = finite(options.max_concurrent_subagents, appConfig.subagents.max_concurrent);
  const maxTotalSubagents = finite(options.max_total_subagents, appConfig.subagents.max_total_per_run);

  const modelOverrides = isBootstrap ? null : (agentConfig?.model_settings ?? null);
  const extensions = readExtensionsForBuild();
  // The run's user sees the public skills plus their own custom ones (legacy shared ones while they have none).
  const skills = skillStorageFor(appConfig.skills, userId).loadSkills(extensions);
  const allowlist: Set<string> | null = isBootstrap
    ? new Set(["bootstrap"])
    : subagent
      ? subagent.available_skills && new Set(subagent.available_skills)
      : agentConfig?.skills != null
        ? new Set(agentConfig.skills)
        : null;
  const missing = [...(allowlist ?? [])].filter((name) => !skills.some((s) => s.name === name));
  if (missing.length) log.warn({ agent: agentName ?? "default", skills: missing }, `skill(s) ${missing.map((m) => `'${m}'`).join(", ")} allowed for agent '${agentName ?? "default"}' are not installed; ignoring them`);
  const soul = subagent ? null : customAgent ? customAgent.soul : loadAgentSoul(null, userId);
  const memoryManager = runContext.memoryManager;
  const nonInteractive = Boolean(options.non_interactive);
  const channelName = typeof options.channel_name === "string" ? options.channel_name : null;

  // Everything the compiled graph depends on. Files are compared by content (agent config, SOUL.md, skills'
  // front matter, extensions), the global config by version (a new AppConfig per content change), paths as
  // resolved now (the home can move between embeds and tests). The user is part of it, so no graph is shared
  // between users even when their inputs match.
  const signature = JSON.stringify([
    identityOf(appConfig),
    identityOf(memoryManager),
    getRuntimeHome(),
    getAgentsDir(),
    getSkillsRoot(appConfig.skills),
    userId,
    branch,
    agentName,
    subagent ?? null,
    agentConfig,
    soul,
    modelName,
    thinkingEnabled,
    reasoningEffort,
    isPlanMode,
    subagentEnabled,
    maxConcurrentSubagents,
    maxTotalSubagents,
    nonInteractive,
    channelName,
    extensions,
    skills,
  ]);
  const { agent, cached } = await sharedBuild(signature, async () => {
    const model = await createChatModel(modelName, { thinkingEnabled, reasoningEffort, modelOverrides, appConfig });
    // Fallback models are built only when the primary fails (nothing on the per-run path that could be avoided).
    const modelFallback = modelConfig.fallbacks?.length
      ? new ModelFallbackMiddleware({
          primary: modelName,
          fallbacks: modelConfig.fallbacks,
          build: (name) => createChatModel(name, { thinkingEnabled: thinkingEnabled && Boolean(getModelConfig(appConfig, name)?.supports_thinking), reasoningEffort, modelOverrides, appConfig }),
        })
      : null;

    const usableSkills = filterSkills(skills, allowlist);
    const deferredDiscovery = appConfig.skills.deferred_discovery && !isBootstrap;
    const skillsSection = getSkillsPromptSection({
      skills,
      allowlist,
      containerPath: appConfig.skills.container_path,
      skillNames: deferredDiscovery ? usableSkills.map((s) => s.name) : null,
      skillEvolution: appConfig.skill_evolution.enabled,
    });

    const subagentRuntime = subagentEnabled ? new LeadSubagentRuntime({ factory: _makeLeadAgent, appConfig }) : undefined;
    // A subagent build takes its role, tool filter and token budget from its type (unknown types never get here:
    // the task tool refuses them; general-purpose is the safe reading of a hand-built marker).
    const subagentType = subagent ? (getSubagentType(appConfig, subagent.type) ?? getSubagentType(appConfig, "general-purpose")!) : null;
    const assembled = await assembleLeadTools({
      appConfig,
      branch,
      agentName,
      groups: subagent ? subagent.tool_groups : (agentConfig?.tool_groups ?? null),
      modelName,
      subagentEnabled,
      subagentRuntime,
      nonInteractive,
      channelName,
      extensions,
      skills,
      usableSkills,
      deferredDiscovery,
    });
    const tools = subagentType ? filterSubagentTools(assembled.tools, subagentType) : assembled.tools;
    const deferred = assembled.deferred;

    const systemPrompt = applyPromptTemplate({
      agentName: branch === "custom" ? agentName : null,
      soul,
      subagentEnabled,
      maxConcurrentSubagents,
      maxTotalSubagents,
      skillsSection,
      skillDiscoveryDeferred: deferredDiscovery,
      memoryToolMode: appConfig.memory.enabled && appConfig.memory.mode === "tool" && !subagent,
      deferredToolsSection: deferred ? deferredToolsSection(deferred.names) : "",
      subagent: Boolean(subagent),
      subagentRole: subagentType?.systemPrompt,
      customMounts: appConfig.sandbox.mounts,
      subagentTypes: subagentEnabled ? getSubagentTypes(appConfig).map((t) => ({ name: t.name, description: t.description })) : [],
    });
    const middleware = buildMiddlewares({
      appConfig,
      agentName,
      isPlanMode,
      supportsVision: modelConfig.supports_vision,
      summaryModel: appConfig.summarization.enabled ? await auxiliaryModel(appConfig.summarization.model_name, appConfig, model) : null,
      titleModel: appConfig.title.enabled && appConfig.title.model_name && !subagent ? await auxiliaryModel(appConfig.title.model_name, appConfig, null) : null,
      memoryManager,
      skills,
      skillAllowlist: allowlist,
      deferredTools: deferred,
      subagentEnabled,
      maxConcurrentSubagents,
      maxTotalSubagents,
      subagent: Boolean(subagent),
      modelFallback,
      tokenBudget: subagentType?.tokenBudget ?? null,
    });

    log.debug({ agent: agentName ?? "default", branch, model: modelName, thinkingEnabled, reasoningEffort, isPlanMode, subagentEnabled, tools: tools.map((t) => t.name) }, "lead agent compiled");
    return createDeerflowAgent(model, tools, {
      middleware,
      systemPrompt,
      name: agentName ?? "lead_agent",
      ...(isBootstrap ? { stateSchema: BootstrapState } : {}),
    });
  });

  const metadata: LeadAgentMetadata = {
    agent_name: agentName ?? "default",
    model_name: modelName,
    thinking_enabled: thinkingEnabled,
    reasoning_effort: reasoningEffort,
    is_plan_mode: isPlanMode,
    subagent_enabled: subagentEnabled,
    tool_groups: subagent ? subagent.tool_groups : (agentConfig?.tool_groups ?? null),
    available_skills: allowlist ? [...allowlist].sort() : null,
    // DeerFlow silently runs the default model for an unknown name; the run record says so.
    ...(requested && requested !== modelName ? { model_substitution: { requested: String(requested).slice(0, 200), used: modelName, reason: "not_configured" } } : {}),
  };
  const callbacks = await buildTracingCallbacks(undefined, { userId, threadId: runContext.threadId });
  log.debug({ agent: agentName ?? "default", branch, model: modelName, cached }, "lead agent built");
  // The request's own copy of the shared compiled graph (a few µs): nodes, channels and middlewares are shared,
  // and middleware state is kept per run; the copy's checkpointer and config belong to the caller.
  return Object.assign(agent.graph.withConfig({}), { resolved: { metadata, callbacks } }) as LeadAgent;
}

/**
 * The LangGraph-style factory `(config) => graph`. Takes `app_config` from the merged runtime config when it is a
 * real AppConfig (context beats configurable; the worker installs one per run), else `getAppConfig()`. Mirrors
 * DeerFlow `make_lead_agent`. @throws whatever {@link _makeLeadAgent} throws.
 * @example
 * ```ts
 * // The gateway's own call (worker.ts), and what a LangGraph-style graph registry would call:
 * const agent = await makeLeadAgent({ configurable: { thread_id: "t1" }, context: { thread_id: "t1", user_id: "default", model_name: "gpt-4o-mini" } });
 * const stream = await agent.stream({ messages: [{ role: "user", content: "hi" }] }, { context: { thread_id: "t1" }, streamMode: "values" });
 * ```
 */
export function makeLeadAgent(config: LeadAgentConfig): Promise<LeadAgent> {
  const appConfig = runContextOf(config).appConfig ?? getAppConfig();
  return _makeLeadAgent(config, { appConfig });
}
