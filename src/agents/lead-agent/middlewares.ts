// Port of DeerFlow agents/lead_agent/agent.py (build_middlewares): the app-layer middleware chain.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AgentMiddleware } from "langchain";
import type { AppConfig } from "../../config/schema.js";
import type { Skill } from "../../skills/parse-skill.js";
import type { MemoryManager } from "../memory/manager.js";
import { ClarificationMiddleware } from "../middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../middlewares/dangling-tool-call.js";
import { DeferredToolFilterMiddleware } from "../middlewares/deferred-tool-filter.js";
import { McpRoutingMiddleware } from "../middlewares/mcp-routing.js";
import type { McpRoutingIndex } from "../../tools/mcp-routing.js";
import { DynamicContextMiddleware } from "../middlewares/dynamic-context.js";
import { InputSanitizationMiddleware, ToolResultSanitizationMiddleware } from "../middlewares/input-sanitization.js";
import { LLMErrorHandlingMiddleware } from "../middlewares/llm-error-handling.js";
import { LoopDetectionMiddleware } from "../middlewares/loop-detection.js";
import { ModelLengthFinishReasonMiddleware } from "../middlewares/model-length-finish-reason.js";
import { ReadBeforeWriteMiddleware } from "../middlewares/read-before-write.js";
import { TerminalResponseMiddleware } from "../middlewares/terminal-response.js";
import { ToolOutputBudgetMiddleware } from "../middlewares/tool-output-budget.js";
import { ToolProgressMiddleware } from "../middlewares/tool-progress.js";
import { MemoryMiddleware } from "../middlewares/memory.js";
import { SafetyFinishReasonMiddleware } from "../middlewares/safety-finish-reason.js";
import { SandboxMiddleware } from "../middlewares/sandbox.js";
import { SkillActivationMiddleware } from "../middlewares/skill-activation.js";
import { SkillToolPolicyMiddleware, skillPolicyNeeded } from "../middlewares/skill-tool-policy.js";
import { SubagentLimitMiddleware } from "../middlewares/subagent-limit.js";
import { createSummarizationMiddleware } from "../middlewares/summarization.js";
import { SystemMessageCoalescingMiddleware } from "../middlewares/system-message-coalescing.js";
import { ThreadDataMiddleware } from "../middlewares/thread-data.js";
import { TitleMiddleware } from "../middlewares/title.js";
import { TodoMiddleware } from "../middlewares/todo.js";
import { TokenBudgetMiddleware, type TokenBudgetConfig } from "../middlewares/token-budget.js";
import { TokenUsageMiddleware } from "../middlewares/token-usage.js";
import { ToolErrorHandlingMiddleware } from "../middlewares/tool-error-handling.js";
import { UploadsMiddleware } from "../middlewares/uploads.js";
import { ViewImageMiddleware } from "../middlewares/view-image.js";

/** Options of {@link buildMiddlewares}. */
export interface BuildMiddlewaresOptions {
  appConfig: AppConfig;
  /** The agent's name (memory bucket, dynamic-context memory); null for the default agent. Set in bootstrap too. */
  agentName?: string | null;
  /** Adds TodoMiddleware (`is_plan_mode`). */
  isPlanMode?: boolean;
  /** Whether the resolved model `supports_vision`: adds ViewImageMiddleware. */
  supportsVision?: boolean;
  /** Model that writes summaries (summarization.model_name, else the run's model); summarization is skipped without one. */
  summaryModel?: BaseChatModel | null;
  /** Model that writes titles (title.model_name); without one the title is the shortened first message. */
  titleModel?: BaseChatModel | null;
  /** The process's memory backend (`memory.manager_class`); default the run's, else the process-wide default. */
  memoryManager?: MemoryManager;
  /** Every discovered skill (enabled and disabled), for slash activation. */
  skills?: readonly Skill[];
  /** The agent's skill allowlist (null = all enabled skills). */
  skillAllowlist?: ReadonlySet<string> | null;
  /** Deferred tools of this build (tool_search); DeferredToolFilter is added when non-empty. */
  deferredTools?: { names: ReadonlySet<string>; hash: string } | null;
  /** Routing hints of the deferred MCP tools; McpRoutingMiddleware is added (before DeferredToolFilter) when non-empty. */
  mcpRouting?: McpRoutingIndex | null;
  /** Adds SubagentLimitMiddleware (`subagent_enabled`). */
  subagentEnabled?: boolean;
  /** `task` calls per response (default 3, clamped 1-4). */
  maxConcurrentSubagents?: number;
  /** `task` calls per run (default `subagents.max_total_per_run`). */
  maxTotalSubagents?: number | null;
  /** The chain of a `task` subagent: no Title, no Memory, no memory injection. */
  subagent?: boolean;
  /** Caller-supplied middlewares, placed after the guard slots and before SafetyFinishReason and Clarification. */
  custom?: AgentMiddleware[];
  /** The model's fallback chain (ModelFallbackMiddleware), placed after the custom middlewares. */
  modelFallback?: AgentMiddleware | null;
  /** Attempts per model call of this agent's model (its entry's `max_retries` + 1); null: `llm_call.retry_max_attempts`. */
  modelMaxAttempts?: number | null;
  /** Tool-call guards (authorization, then guardrails: GuardrailMiddleware), placed between DanglingToolCall and ToolErrorHandling. */
  toolGuards?: AgentMiddleware[];
  /** Clock of DynamicContextMiddleware (tests). */
  now?: () => Date;
  /** A token budget that replaces `token_budget` for this build (a subagent type's `token_budget`). */
  tokenBudget?: TokenBudgetConfig | null;
}

/**
 * The app-layer chain, in DeerFlow's order (DeerFlow `_build_middlewares` and `_build_runtime_middlewares`):
 * 0a. [ToolOutputBudgetMiddleware when `tool_output.enabled`]; 0b. ToolResultSanitizationMiddleware (inner of
 *     the budget);
 * 1. ThreadDataMiddleware (lazy paths); 2. UploadsMiddleware; 3. SandboxMiddleware (lazy);
 * 3b. InputSanitizationMiddleware (upstream's outermost model wrapper, placed inner of ThreadData/Uploads
 *     because they make upstream's before_agent rewrite of the user message on the first model call);
 * 4. DanglingToolCallMiddleware; 4b. LLMErrorHandlingMiddleware (`llm_call`, `circuit_breaker`);
 * 4c. [tool guards: authorization, then guardrails (GuardrailMiddleware), upstream's place];
 * 4d. [ReadBeforeWriteMiddleware when `read_before_write.enabled`]; 4e. [ToolProgressMiddleware when
 *     `tool_progress.enabled`, outer of ToolErrorHandling so exceptions reach it as error results];
 * 5. ToolErrorHandlingMiddleware;
 * 6. DynamicContextMiddleware (date + memory reminder per turn; no memory for subagents);
 * 7. SkillActivationMiddleware (`/skill-name`); 7b. [SkillToolPolicyMiddleware when a usable skill declares
 *     `allowed-tools`: the active skills' lists bound the tools];
 * 8. [SummarizationMiddleware when `summarization.enabled` and a summary model exists];
 * 9. [TodoMiddleware when `is_plan_mode`];
 * 10. [TokenUsageMiddleware when `token_usage.enabled`, default on];
 * 11. TitleMiddleware (always, `title.enabled` gates it inside; not for subagents);
 * 12. MemoryMiddleware (always in middleware mode, inert when `memory.enabled` is false; not in memory tool mode,
 *     not for subagents);
 * 13. [ViewImageMiddleware when the resolved model supports vision];
 * 14. [McpRoutingMiddleware when deferred tools have routing hints]; [DeferredToolFilterMiddleware when the build
 *     has deferred tools];
 * 15. SystemMessageCoalescingMiddleware;
 * 16. [SubagentLimitMiddleware when `subagent_enabled`: `max_concurrent_subagents` (3), `max_total_subagents`
 *     (default `subagents.max_total_per_run`)];
 * 17. [LoopDetectionMiddleware when `loop_detection.enabled`]; 18. [TokenBudgetMiddleware when `token_budget.enabled`];
 * 19. [custom middlewares, in order]; 19b. [ModelFallbackMiddleware when the model has `fallbacks`];
 * 19c. TerminalResponseMiddleware; 19d. ModelLengthFinishReasonMiddleware;
 * 20. [SafetyFinishReasonMiddleware when `safety_finish_reason.enabled`];
 * 21. ClarificationMiddleware (always last).
 * No middleware runs as a graph node: ThreadData and Uploads make DeerFlow's before_agent writes on the run's first
 * model call (RunStartMiddleware); everything wraps the model or tool call, so wrapModelCall post-processing runs
 * innermost first (Safety before LoopDetection, as DeerFlow's reverse
 * after_model order).
 * @throws ValidationError / TypeError for a bad `safety_finish_reason.detectors` list.
 */
export function buildMiddlewares(options: BuildMiddlewaresOptions): AgentMiddleware[] {
  const { appConfig } = options;
  const memoryConfig = options.subagent ? { ...appConfig.memory, injection_enabled: false } : appConfig.memory;
  const chain: AgentMiddleware[] = [];
  if (appConfig.tool_output.enabled) chain.push(new ToolOutputBudgetMiddleware(appConfig.tool_output));
  chain.push(
    new ToolResultSanitizationMiddleware(),
    new ThreadDataMiddleware({ lazyInit: true }),
    // The lead agent's state (ThreadState, or BootstrapState built on its fields) already has `uploaded_files`.
    new UploadsMiddleware({ declareState: false }),
    new SandboxMiddleware({ lazyInit: true }),
    // Inner of ThreadData/Uploads: they rewrite the newest user message on the first model call, which upstream
    // does before any (before_agent), so the sanitizer must see their result.
    new InputSanitizationMiddleware(),
    new DanglingToolCallMiddleware(),
    new LLMErrorHandlingMiddleware({ llmCall: appConfig.llm_call, circuitBreaker: appConfig.circuit_breaker, maxAttempts: options.modelMaxAttempts ?? undefined }),
    ...(options.toolGuards ?? []),
  );
  if (appConfig.read_before_write.enabled) chain.push(new ReadBeforeWriteMiddleware());
  if (appConfig.tool_progress.enabled) {
    const loopWarnThreshold = appConfig.loop_detection.enabled ? appConfig.loop_detection.warn_threshold : null;
    chain.push(new ToolProgressMiddleware(appConfig.tool_progress, { loopWarnThreshold }));
  }
  chain.push(
    new ToolErrorHandlingMiddleware(),
    new DynamicContextMiddleware({ agentName: options.agentName ?? null, memoryConfig, now: options.now, manager: options.memoryManager }),
  );
  const skillOptions = { skills: options.skills ?? [], allowlist: options.skillAllowlist ?? null, containerPath: appConfig.skills.container_path };
  chain.push(new SkillActivationMiddleware(skillOptions));
  // Only when some usable skill declares allowed-tools: otherwise the policy never restricts, so no run pays for it.
  if (skillPolicyNeeded(skillOptions)) chain.push(new SkillToolPolicyMiddleware(skillOptions));
  const summarization = createSummarizationMiddleware(appConfig.summarization, options.summaryModel);
  if (summarization) chain.push(summarization);
  if (options.isPlanMode) chain.push(new TodoMiddleware());
  if (appConfig.token_usage.enabled) chain.push(new TokenUsageMiddleware());
  if (!options.subagent) {
    chain.push(new TitleMiddleware({ section: appConfig.title, model: options.titleModel ?? undefined }));
    if (!(appConfig.memory.enabled && appConfig.memory.mode === "tool") || options.memoryManager?.requiresPassiveWritesInToolMode) {
      chain.push(new MemoryMiddleware({ agentName: options.agentName ?? "default", memoryConfig: appConfig.memory, manager: options.memoryManager }));
    }
  }
  if (options.supportsVision) chain.push(new ViewImageMiddleware());
  if (options.deferredTools?.names.size) {
    const { names, hash } = options.deferredTools;
    // Upstream's order: routing promotes before the filter hides.
    const routing = options.mcpRouting?.size ? new McpRoutingMiddleware(options.mcpRouting, hash, appConfig.tool_search.auto_promote_top_k) : undefined;
    if (routing) chain.push(routing);
    chain.push(new DeferredToolFilterMiddleware(names, hash, routing));
  }
  chain.push(new SystemMessageCoalescingMiddleware());
  if (options.subagentEnabled) {
    chain.push(new SubagentLimitMiddleware({ maxConcurrent: options.maxConcurrentSubagents ?? 3, maxTotal: options.maxTotalSubagents || appConfig.subagents.max_total_per_run }));
  }
  if (appConfig.loop_detection.enabled) chain.push(new LoopDetectionMiddleware(appConfig.loop_detection));
  const budget = options.tokenBudget ?? appConfig.token_budget;
  if (budget.enabled) chain.push(new TokenBudgetMiddleware(budget));
  chain.push(...(options.custom ?? []));
  if (options.modelFallback) chain.push(options.modelFallback);
  chain.push(new TerminalResponseMiddleware(), new ModelLengthFinishReasonMiddleware());
  if (appConfig.safety_finish_reason.enabled) chain.push(new SafetyFinishReasonMiddleware(appConfig.safety_finish_reason.detectors ?? null));
  chain.push(new ClarificationMiddleware());
  return chain;
}
