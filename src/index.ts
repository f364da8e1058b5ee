// Public entry of the SDK layer: build DeerFlow agents from plain arguments, or the lead agent from config.
export { createDeerflowAgent, type CreateDeerflowAgentOptions, type DeerflowAgent } from "./agents/factory.js";
export { RuntimeFeatures, Next, Prev, type RuntimeFeaturesInit, type FeatureFlag } from "./agents/features.js";
export { assembleFromFeatures, insertExtra, FeatureUnavailableError } from "./agents/chain.js";
export { DeerflowMiddleware } from "./agents/middlewares/base.js";
export { ClarificationMiddleware } from "./agents/middlewares/clarification.js";
export { DanglingToolCallMiddleware } from "./agents/middlewares/dangling-tool-call.js";
export { LoopDetectionMiddleware } from "./agents/middlewares/loop-detection.js";
export { ThreadDataMiddleware } from "./agents/middlewares/thread-data.js";
export { ToolErrorHandlingMiddleware } from "./agents/middlewares/tool-error-handling.js";
export { ThreadState, mergeArtifacts, mergeSandbox, mergeTodos, mergeViewedImages } from "./agents/thread-state.js";
export { makeLeadAgent, _makeLeadAgent } from "./agents/lead-agent/agent.js";
export { applyPromptTemplate } from "./agents/lead-agent/prompt.js";
export { getAppConfig, setAppConfig, resetAppConfig, withAppConfig, loadAppConfig } from "./config/app-config.js";
export { parseAppConfig, type AppConfig } from "./config/schema.js";
export { createChatModel } from "./models/create-chat-model.js";
export { ScriptedChatModel } from "./models/scripted-chat-model.js";
export { resolveAgentFactory } from "./runtime/agent-factory.js";
export { buildApp } from "./app.js";
