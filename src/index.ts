// Public entry of the SDK layer: build DeerFlow agents from plain arguments, or the lead agent from config.
// The HTTP server (buildApp, the run services) has its own entry, src/gateway.ts, so embedding the SDK never
// loads Fastify or the routes.
export { createDeerflowAgent, type CreateDeerflowAgentOptions, type DeerflowAgent } from "./agents/factory.js";
export { RuntimeFeatures, Next, Prev, type RuntimeFeaturesInit, type FeatureFlag } from "./agents/features.js";
export { assembleFromFeatures, insertExtra, FeatureUnavailableError } from "./agents/chain.js";
export { DeerflowMiddleware } from "./agents/middlewares/base.js";
export { ClarificationMiddleware } from "./agents/middlewares/clarification.js";
export { DanglingToolCallMiddleware } from "./agents/middlewares/dangling-tool-call.js";
export { LoopDetectionMiddleware } from "./agents/middlewares/loop-detection.js";
export { MemoryMiddleware, type MemoryMiddlewareOptions } from "./agents/middlewares/memory.js";
export { SandboxMiddleware, type SandboxMiddlewareOptions } from "./agents/middlewares/sandbox.js";
export { SubagentLimitMiddleware, type SubagentLimitOptions } from "./agents/middlewares/subagent-limit.js";
export { SummarizationMiddleware, createSummarizationMiddleware, type SummarizationOptions } from "./agents/middlewares/summarization.js";
export { ThreadDataMiddleware } from "./agents/middlewares/thread-data.js";
export { TitleMiddleware, fallbackTitle, type TitleMiddlewareOptions } from "./agents/middlewares/title.js";
export { TodoMiddleware, type TodoMiddlewareOptions } from "./agents/middlewares/todo.js";
export { TokenBudgetMiddleware } from "./agents/middlewares/token-budget.js";
export { ToolErrorHandlingMiddleware } from "./agents/middlewares/tool-error-handling.js";
export { UploadsMiddleware, type UploadsOptions } from "./agents/middlewares/uploads.js";
export { RunStartMiddleware, takeUnsavedRunStartWrites, type RunStartRuntime, type RunStartUpdate } from "./agents/middlewares/run-start.js";
export { ViewImageMiddleware } from "./agents/middlewares/view-image.js";
export { resolveRunScope, RunScopedStore, type RunScope } from "./agents/middlewares/run-scope.js";
export {
  ThreadState, ThreadStateFields, THREAD_STATE_FIELDS, mergeArtifacts, mergeDelegations, mergeGoal, mergePromoted, mergeSandbox,
  mergeSkillContext, mergeTodos, mergeViewedImages,
} from "./agents/thread-state.js";
export { FileMemoryStore } from "./agents/memory/file-memory-store.js";
export type { MemoryDocument, MemoryFact, MemorySection } from "./agents/memory/memory-document.js";
export { buildMemoryManager } from "./agents/memory/build-manager.js";
export {
  MemoryFactNotFoundError, MemoryUnsupportedError, type MemoryManager, type MemoryManagerInit, type MemoryScope,
  type MemorySearchHit,
} from "./agents/memory/manager.js";
export { DeerMemManager, defaultMemoryManager } from "./agents/memory/deermem-manager.js";
export { NoopMemoryManager } from "./agents/memory/noop-manager.js";
export { ensureSandbox, type SandboxProvider } from "./sandbox/provider.js";
export { LocalSandboxProvider } from "./sandbox/local-provider.js";
export { bashTool, lsTool, readFileTool, strReplaceTool, writeFileTool } from "./tools/sandbox/index.js";
export { createPresentFilesTool } from "./tools/builtins/present-files.js";
export { createTaskTool, type SubagentRuntime } from "./tools/builtins/task.js";
export { createViewImageTool } from "./tools/builtins/view-image.js";
export { createMemoryTools } from "./tools/builtins/memory-tools.js";
export { createWriteTodosTool } from "./tools/builtins/write-todos.js";
export { createAskClarificationTool } from "./tools/builtins/ask-clarification.js";
export { makeLeadAgent, _makeLeadAgent } from "./agents/lead-agent/agent.js";
export { buildMiddlewares } from "./agents/lead-agent/middlewares.js";
export { LeadSubagentRuntime, SUBAGENT_TYPES } from "./agents/lead-agent/subagent-runtime.js";
export { DynamicContextMiddleware } from "./agents/middlewares/dynamic-context.js";
export { SkillActivationMiddleware } from "./agents/middlewares/skill-activation.js";
export { TokenUsageMiddleware } from "./agents/middlewares/token-usage.js";
export { DeferredToolFilterMiddleware } from "./agents/middlewares/deferred-tool-filter.js";
export { SystemMessageCoalescingMiddleware } from "./agents/middlewares/system-message-coalescing.js";
export { SafetyFinishReasonMiddleware } from "./agents/middlewares/safety-finish-reason.js";
export { loadSkills, filterSkills } from "./skills/load-skills.js";
export { parseSkillFile, type Skill } from "./skills/parse-skill.js";
export { getSkillsPromptSection } from "./skills/skills-prompt.js";
export { getAvailableTools } from "./tools/get-available-tools.js";
export { McpToolCache, closeMcpClients } from "./tools/mcp-tools.js";
export { createToolSearchTool, buildDeferredCatalog } from "./tools/builtins/tool-search.js";
export { createSetupAgentTool } from "./tools/builtins/setup-agent.js";
export { createUpdateAgentTool } from "./tools/builtins/update-agent.js";
export { createDescribeSkillTool } from "./tools/builtins/describe-skill.js";
export { applyPromptTemplate } from "./agents/lead-agent/prompt.js";
export { getAppConfig, setAppConfig, resetAppConfig, withAppConfig, loadAppConfig } from "./config/app-config.js";
export { parseAppConfig, type AppConfig } from "./config/schema.js";
export { createChatModel } from "./models/create-chat-model.js";
export { ScriptedChatModel } from "./models/scripted-chat-model.js";
export { buildRunContext, runContextOf, DEFAULT_USER_ID, RunContextSchema, type RunContext, type RunContextView } from "./agents/run-context.js";
export { streamAgent, type StreamAgentOptions } from "./agents/stream-agent.js";
