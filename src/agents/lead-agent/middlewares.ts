// Port of DeerFlow agents/lead_agent/agent.py (build_middlewares), for the middlewares this release ships.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AgentMiddleware } from "langchain";
import type { AppConfig } from "../../config/schema.js";
import type { MemoryUpdateQueue } from "../memory/memory-queue.js";
import { ClarificationMiddleware } from "../middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../middlewares/dangling-tool-call.js";
import { LoopDetectionMiddleware } from "../middlewares/loop-detection.js";
import { MemoryMiddleware } from "../middlewares/memory.js";
import { SandboxMiddleware } from "../middlewares/sandbox.js";
import { createSummarizationMiddleware } from "../middlewares/summarization.js";
import { ThreadDataMiddleware } from "../middlewares/thread-data.js";
import { TitleMiddleware } from "../middlewares/title.js";
import { TodoMiddleware } from "../middlewares/todo.js";
import { TokenBudgetMiddleware } from "../middlewares/token-budget.js";
import { ToolErrorHandlingMiddleware } from "../middlewares/tool-error-handling.js";
import { UploadsMiddleware } from "../middlewares/uploads.js";
import { ViewImageMiddleware } from "../middlewares/view-image.js";

/** Options of {@link buildMiddlewares}. */
export interface BuildMiddlewaresOptions {
  appConfig: AppConfig;
  /** The agent's name (memory bucket); null for the default agent. */
  agentName?: string | null;
  /** Adds TodoMiddleware (`is_plan_mode`). */
  isPlanMode?: boolean;
  /** Whether the resolved model `supports_vision`: adds ViewImageMiddleware. */
  supportsVision?: boolean;
  /** Model that writes summaries (summarization.model_name, else the run's model); summarization is skipped without one. */
  summaryModel?: BaseChatModel | null;
  /** Model that writes titles (title.model_name); without one the title is the shortened first message. */
  titleModel?: BaseChatModel | null;
  /** The process's memory queue (shared, so writes to one memory file never interleave); default a new one. */
  memoryQueue?: MemoryUpdateQueue;
  /** Caller-supplied middlewares, placed after the guard slots and before Clarification. */
  custom?: AgentMiddleware[];
}

/**
 * The app-layer chain, in DeerFlow's order (spec/agent-factory.md section 2.10, seed projection, for what ships):
 * 1. ThreadDataMiddleware (lazy paths); 2. UploadsMiddleware; 3. SandboxMiddleware (lazy);
 * 4. DanglingToolCallMiddleware; 5. ToolErrorHandlingMiddleware;
 * 6. [SummarizationMiddleware when `summarization.enabled` and a summary model exists];
 * 7. [TodoMiddleware when `is_plan_mode`];
 * 8. TitleMiddleware (always; `title.enabled` gates it inside);
 * 9. MemoryMiddleware (always in middleware mode; inert when `memory.enabled` is false);
 * 10. [ViewImageMiddleware when the resolved model supports vision];
 * 11. [LoopDetectionMiddleware when `loop_detection.enabled`]; 12. [TokenBudgetMiddleware when `token_budget.enabled`];
 * 13. [custom middlewares, in order]; 14. ClarificationMiddleware (always last).
 * Only ThreadData and Uploads run as graph nodes (beforeAgent); everything else wraps the model or tool call.
 */
export function buildMiddlewares(options: BuildMiddlewaresOptions): AgentMiddleware[] {
  const { appConfig } = options;
  const chain: AgentMiddleware[] = [
    new ThreadDataMiddleware({ lazyInit: true }),
    new UploadsMiddleware(),
    new SandboxMiddleware({ lazyInit: true }),
    new DanglingToolCallMiddleware(),
    new ToolErrorHandlingMiddleware(),
  ];
  const summarization = createSummarizationMiddleware(appConfig.summarization, options.summaryModel);
  if (summarization) chain.push(summarization);
  if (options.isPlanMode) chain.push(new TodoMiddleware());
  chain.push(new TitleMiddleware({ ...appConfig.title, model: options.titleModel ?? undefined }));
  if (!(appConfig.memory.enabled && appConfig.memory.mode === "tool")) {
    chain.push(new MemoryMiddleware({ agentName: options.agentName ?? "default", memoryConfig: appConfig.memory, queue: options.memoryQueue }));
  }
  if (options.supportsVision) chain.push(new ViewImageMiddleware());
  if (appConfig.loop_detection.enabled) chain.push(new LoopDetectionMiddleware(appConfig.loop_detection));
  if (appConfig.token_budget.enabled) chain.push(new TokenBudgetMiddleware(appConfig.token_budget));
  chain.push(...(options.custom ?? []), new ClarificationMiddleware());
  return chain;
}
