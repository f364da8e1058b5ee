// Port of DeerFlow agents/lead_agent/agent.py (build_middlewares), for the middlewares this release ships.
import type { AgentMiddleware } from "langchain";
import type { AppConfig } from "../../config/schema.js";
import { ClarificationMiddleware } from "../middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../middlewares/dangling-tool-call.js";
import { LoopDetectionMiddleware } from "../middlewares/loop-detection.js";
import { ThreadDataMiddleware } from "../middlewares/thread-data.js";
import { ToolErrorHandlingMiddleware } from "../middlewares/tool-error-handling.js";

/** Options of {@link buildMiddlewares}. */
export interface BuildMiddlewaresOptions {
  appConfig: AppConfig;
  /** Caller-supplied middlewares, placed after the guard slots and before Clarification. */
  custom?: AgentMiddleware[];
}

/**
 * The app-layer chain, in DeerFlow's order (spec/agent-factory.md section 2.10, seed projection):
 * 1. ThreadDataMiddleware (lazy paths);
 * 2. DanglingToolCallMiddleware;
 * 3. ToolErrorHandlingMiddleware;
 * 4. [LoopDetectionMiddleware when `loop_detection.enabled`, thresholds from config];
 * 5. [custom middlewares, in order];
 * 6. ClarificationMiddleware (always last).
 * Every hook here is a wrap hook except ThreadData.beforeAgent and LoopDetection.afterModel, so a model turn
 * costs two extra supersteps at most.
 */
export function buildMiddlewares(options: BuildMiddlewaresOptions): AgentMiddleware[] {
  const { appConfig } = options;
  const chain: AgentMiddleware[] = [new ThreadDataMiddleware({ lazyInit: true }), new DanglingToolCallMiddleware(), new ToolErrorHandlingMiddleware()];
  if (appConfig.loop_detection.enabled) chain.push(new LoopDetectionMiddleware(appConfig.loop_detection));
  chain.push(...(options.custom ?? []), new ClarificationMiddleware());
  return chain;
}
