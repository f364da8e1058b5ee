// Port of DeerFlow agents/middlewares/memory_middleware.py (MemoryMiddleware).
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { defaultMemoryManager } from "../memory/deermem-manager.js";
import type { MemoryManager } from "../memory/manager.js";
import { MemoryConfigSchema, type MemoryConfig } from "../memory/memory-config.js";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent } from "./message-utils.js";
import { runContextOf, type RuntimeLike } from "../run-context.js";
import { parseOnce } from "../parse-once.js";

export { MemoryConfigSchema, type MemoryConfig };

/** Options of {@link MemoryMiddleware}. */
export interface MemoryMiddlewareOptions {
  /** Memory bucket: the agent's name (`createDeerflowAgent` passes its `name`, default `"default"`). */
  agentName?: string;
  /** The `memory` section (partial; defaults applied). */
  memoryConfig?: Record<string, unknown> | null;
  /**
   * Where turns go. Default: the run's manager (the gateway puts its `memory.manager_class` backend in the run
   * context), else the process-wide default backend.
   */
  manager?: MemoryManager;
}

/**
 * Hands each finished turn to the memory manager: on every model response that is a final answer (no tool-call
 * intent), if `memory.enabled` and a thread id is known (context, else `configurable`), the state's messages plus
 * that answer go to `manager.add` with the agent name and the runtime user id. State is never changed; the
 * manager debounces and coalesces per thread. A run that ends on a clarification question is picked up with the
 * next final answer.
 * Hook: wrapModelCall (DeerFlow uses after_agent; a final answer is where the agent ends, and this adds no graph
 * node).
 */
export class MemoryMiddleware extends DeerflowMiddleware {
  readonly name = "MemoryMiddleware";
  readonly agentName: string;
  readonly memoryConfig: MemoryConfig;
  private readonly fixedManager?: MemoryManager;

  constructor(options: MemoryMiddlewareOptions = {}) {
    super();
    this.agentName = options.agentName ?? "default";
    this.memoryConfig = parseOnce(MemoryConfigSchema, options.memoryConfig ?? {});
    this.fixedManager = options.manager;
  }

  /** The manager turns go to for a runtime (see {@link MemoryMiddlewareOptions.manager}). */
  managerFor(runtime: RuntimeLike | undefined): MemoryManager {
    return this.fixedManager ?? runContextOf(runtime).memoryManager ?? defaultMemoryManager();
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    if (!this.memoryConfig.enabled || !AIMessage.isInstance(response) || hasToolCallIntent(response)) return response as never;
    const runtime = request.runtime as RuntimeLike;
    const { threadId, userId } = runContextOf(runtime);
    const messages = request.state?.messages ?? request.messages;
    if (typeof threadId === "string" && threadId && messages.length) {
      try {
        this.managerFor(runtime).add(threadId, [...messages, response], { userId, agentName: this.agentName });
      } catch (err) {
        getLogger().warn({ thread_id: threadId, err: (err as Error).message }, "memory update not queued");
      }
    }
    return response as never;
  }
}
