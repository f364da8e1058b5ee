// Port of DeerFlow agents/lead_agent/agent.py: _make_lead_agent (app layer) and make_lead_agent (entry). What a
// build resolves per call is in resolve-build-inputs.ts; this file compiles (once per signature) and hands out copies.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { ReducedValue, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { getAppConfig } from "../../config/app-config.js";
import { getModelConfig, type AppConfig } from "../../config/schema.js";
import { getLogger } from "../../logger.js";
import { createChatModel } from "../../models/create-chat-model.js";
import { ModelFallbackMiddleware } from "../middlewares/model-fallback.js";
import { filterSkills } from "../../skills/load-skills.js";
import { getSkillsPromptSection } from "../../skills/skills-prompt.js";
import { deferredToolsSection } from "../../tools/builtins/tool-search.js";
import { mcpRoutingHintsSection } from "../../tools/mcp-routing.js";
import { createDeerflowAgent, type DeerflowAgent } from "../factory.js";
import { sharedBuild } from "./build-cache.js";
import { ThreadStateFields } from "../thread-state.js";
import { applyToolGuards } from "./guards.js";
import { buildMiddlewares } from "./middlewares.js";
import { applyPromptTemplate } from "./prompt.js";
import { buildSignature, resolveBuildInputs, type BuildInputs, type LeadAgentConfig } from "./resolve-build-inputs.js";
import { LeadSubagentRuntime } from "./subagent-runtime.js";
import { filterSubagentTools, getSubagentType, getSubagentTypes, type SubagentType } from "./subagent-types.js";
import { assembleLeadTools } from "./tools.js";
import { buildTracingCallbacks } from "./tracing.js";
import { runContextOf } from "../run-context.js";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";

export { mergeRuntimeOptions, resolveModelName, resolveRuntimeOption, type LeadAgentConfig, type RuntimeOptions } from "./resolve-build-inputs.js";

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
  const inputs = resolveBuildInputs(config, appConfig);
  const { agent, cached } = await sharedBuild(buildSignature(inputs, appConfig), () => compileLeadAgent(inputs, appConfig));
  const metadata = leadAgentMetadata(inputs);
  const callbacks = await buildTracingCallbacks(undefined, { userId: inputs.runContext.userId, threadId: inputs.runContext.threadId });
  getLogger().debug({ agent: inputs.agentName ?? "default", branch: inputs.branch, model: inputs.modelName, cached }, "lead agent built");
  // The request's own copy of the shared compiled graph (a few µs): nodes, channels and middlewares are shared,
  // and middleware state is kept per run; the copy's checkpointer and config belong to the caller.
  return Object.assign(agent.graph.withConfig({}), { resolved: { metadata, callbacks } }) as LeadAgent;
}

/** The run metadata DeerFlow records for a build (see {@link LeadAgentMetadata}), plus any model substitution. */
function leadAgentMetadata(inputs: BuildInputs): LeadAgentMetadata {
  const { agentName, requested, modelName, subagent, allowlist } = inputs;
  return {
    agent_name: agentName ?? "default",
    model_name: modelName,
    thinking_enabled: inputs.thinkingEnabled,
    reasoning_effort: inputs.reasoningEffort,
    is_plan_mode: inputs.isPlanMode,
    subagent_enabled: inputs.subagentEnabled,
    tool_groups: subagent ? subagent.tool_groups : (inputs.agentConfig?.tool_groups ?? null),
    available_skills: allowlist ? [...allowlist].sort() : null,
    // DeerFlow silently runs the default model for an unknown name; the run record says so.
    ...(requested && requested !== modelName ? { model_substitution: { requested: String(requested).slice(0, 200), used: modelName, reason: "not_configured" } } : {}),
  };
}

/**
 * Compiles the graph for one set of resolved inputs (only on a build-cache miss): the model (and its fallbacks,
 * built lazily), the tools, the system prompt and the middlewares, through `createDeerflowAgent`.
 * @throws UseResolutionError for a model whose `use:` cannot be resolved; whatever a tool or middleware build throws.
 */
async function compileLeadAgent(inputs: BuildInputs, appConfig: AppConfig): Promise<DeerflowAgent> {
  const { modelName, thinkingEnabled, reasoningEffort, modelOverrides, subagent, agentName, branch, isBootstrap } = inputs;
  // LLMErrorHandlingMiddleware owns retries: the clients' own are off, so no call is retried twice over.
  const noClientRetries = { ...(modelOverrides ?? {}), max_retries: 0 };
  const model = await createChatModel(modelName, { thinkingEnabled, reasoningEffort, modelOverrides: noClientRetries, appConfig });
  // Fallback models are built only when the primary fails (nothing on the per-run path that could be avoided).
  const modelFallback = inputs.modelConfig.fallbacks?.length
    ? new ModelFallbackMiddleware({
        primary: modelName,
        fallbacks: inputs.modelConfig.fallbacks,
        build: (name) => createChatModel(name, { thinkingEnabled: thinkingEnabled && Boolean(getModelConfig(appConfig, name)?.supports_thinking), reasoningEffort, modelOverrides: noClientRetries, appConfig }),
      })
    : null;
  const usableSkills = filterSkills(inputs.skills, inputs.allowlist);
  const deferredDiscovery = appConfig.skills.deferred_discovery && !isBootstrap;
  // A subagent build takes its role, tool filter and token budget from its type (unknown types never get here:
  // the task tool refuses them; general-purpose is the safe reading of a hand-built marker).
  const subagentType = subagent ? (getSubagentType(appConfig, subagent.type) ?? getSubagentType(appConfig, "general-purpose")!) : null;
  const assembled = await resolveLeadTools(inputs, appConfig, subagentType, usableSkills, deferredDiscovery);
  const { deferred, routing } = assembled;
  // authorization (tools bound by role) and guardrails: the tools to bind and the call-time guards.
  const { tools, middlewares: toolGuards } = await applyToolGuards(appConfig, inputs.runContext, assembled.tools, deferred ? ["tool_search"] : []);
  const bound = new Set(tools.map((t) => t.name));
  const routes = new Map([...routing].filter(([name]) => bound.has(name)));
  const systemPrompt = leadSystemPrompt(inputs, appConfig, subagentType, usableSkills, deferredDiscovery, deferred, routes);
  const middleware = buildMiddlewares({
    appConfig,
    agentName,
    isPlanMode: inputs.isPlanMode,
    supportsVision: inputs.modelConfig.supports_vision,
    summaryModel: appConfig.summarization.enabled ? await auxiliaryModel(appConfig.summarization.model_name, appConfig, model) : null,
    titleModel: appConfig.title.enabled && appConfig.title.model_name && !subagent ? await auxiliaryModel(appConfig.title.model_name, appConfig, null) : null,
    memoryManager: inputs.runContext.memoryManager,
    skills: inputs.skills,
    skillAllowlist: inputs.allowlist,
    deferredTools: deferred,
    mcpRouting: deferred ? new Map([...routes].filter(([name]) => deferred.names.has(name))) : null,
    subagentEnabled: inputs.subagentEnabled,
    maxConcurrentSubagents: inputs.maxConcurrentSubagents,
    maxTotalSubagents: inputs.maxTotalSubagents,
    subagent: Boolean(subagent),
    modelFallback,
    modelMaxAttempts: typeof inputs.modelConfig.max_retries === "number" ? inputs.modelConfig.max_retries + 1 : null,
    toolGuards,
    tokenBudget: subagentType?.tokenBudget ?? null,
  });
  getLogger().debug({ agent: agentName ?? "default", branch, model: modelName, thinkingEnabled, reasoningEffort, isPlanMode: inputs.isPlanMode, subagentEnabled: inputs.subagentEnabled, tools: tools.map((t) => t.name) }, "lead agent compiled");
  return createDeerflowAgent(model, tools, {
    middleware,
    systemPrompt,
    name: agentName ?? "lead_agent",
    ...(isBootstrap ? { stateSchema: BootstrapState } : {}),
  });
}

/** What {@link resolveLeadTools} returns: the agent's tools and the ones deferred behind `tool_search`. */
type LeadTools = Awaited<ReturnType<typeof assembleLeadTools>>;

/**
 * The branch's tools (`tools.ts`), with the `task` tool's subagent runtime when subagents are on, narrowed to a
 * subagent type's filter for a subagent build.
 */
async function resolveLeadTools(inputs: BuildInputs, appConfig: AppConfig, subagentType: SubagentType | null, usableSkills: BuildInputs["skills"], deferredDiscovery: boolean): Promise<LeadTools> {
  const { subagent, subagentEnabled } = inputs;
  const assembled = await assembleLeadTools({
    appConfig,
    branch: inputs.branch,
    agentName: inputs.agentName,
    groups: subagent ? subagent.tool_groups : (inputs.agentConfig?.tool_groups ?? null),
    modelName: inputs.modelName,
    subagentEnabled,
    subagentRuntime: subagentEnabled ? new LeadSubagentRuntime({ factory: _makeLeadAgent, appConfig }) : undefined,
    nonInteractive: inputs.nonInteractive,
    channelName: inputs.channelName,
    extensions: inputs.extensions,
    skills: inputs.skills,
    usableSkills,
    deferredDiscovery,
  });
  return subagentType ? { ...assembled, tools: filterSubagentTools(assembled.tools, subagentType) } : assembled;
}

/** The system prompt (`prompt.ts`): soul, skills section, subagent guidance, deferred tools, memory mode, mounts. */
function leadSystemPrompt(inputs: BuildInputs, appConfig: AppConfig, subagentType: SubagentType | null, usableSkills: BuildInputs["skills"], deferredDiscovery: boolean, deferred: LeadTools["deferred"], routes: LeadTools["routing"]): string {
  const { subagent, subagentEnabled } = inputs;
  const skillsSection = getSkillsPromptSection({
    skills: inputs.skills,
    allowlist: inputs.allowlist,
    containerPath: appConfig.skills.container_path,
    skillNames: deferredDiscovery ? usableSkills.map((s) => s.name) : null,
    skillEvolution: appConfig.skill_evolution.enabled,
  });
  return applyPromptTemplate({
    agentName: inputs.branch === "custom" ? inputs.agentName : null,
    soul: inputs.soul,
    subagentEnabled,
    maxConcurrentSubagents: inputs.maxConcurrentSubagents,
    maxTotalSubagents: inputs.maxTotalSubagents,
    skillsSection,
    skillDiscoveryDeferred: deferredDiscovery,
    memoryToolMode: appConfig.memory.enabled && appConfig.memory.mode === "tool" && !subagent,
    deferredToolsSection: deferred ? deferredToolsSection(deferred.names) : "",
    mcpRoutingHintsSection: mcpRoutingHintsSection(routes, deferred?.names ?? new Set()),
    subagent: Boolean(subagent),
    subagentRole: subagentType?.systemPrompt,
    customMounts: appConfig.sandbox.mounts,
    subagentTypes: subagentEnabled ? getSubagentTypes(appConfig).map((t) => ({ name: t.name, description: t.description })) : [],
  });
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
