// Port of DeerFlow agents/middlewares/memory_middleware.py (MemoryMiddleware).
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { MemoryUpdateQueue } from "../memory/memory-queue.js";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent } from "./message-utils.js";
import { runContextOf, type RuntimeLike } from "../run-context.js";
import { z } from "zod";

/** `memory` (DeerFlow `memory_config.py`): long-term memory; legacy extra keys are tolerated. */
export const MemoryConfigSchema = z.looseObject({
  enabled: z.boolean().default(true),
  mode: z.enum(["middleware", "tool"]).default("middleware"),
  injection_enabled: z.boolean().default(true),
  shutdown_flush_timeout_seconds: z.number().min(1).max(300).default(30),
  manager_class: z.string().default("deermem"),
  backend_config: z.record(z.string(), z.unknown()).default({}),
});

/** The `memory` section as MemoryMiddleware reads it (defaults: enabled, middleware mode). */
export type MemoryConfig = ReturnType<typeof MemoryConfigSchema.parse>;

/** Options of {@link MemoryMiddleware}. */
export interface MemoryMiddlewareOptions {
  /** Memory bucket: the agent's name (`createDeerflowAgent` passes its `name`, default `"default"`). */
  agentName?: string;
  /** The `memory` section (partial; defaults applied). */
  memoryConfig?: Record<string, unknown> | null;
  /** Where conversations are queued; default a queue over the file store under `DEER_FLOW_HOME`. */
  queue?: MemoryUpdateQueue;
}

/**
 * Queues the conversation for a memory update when the agent finishes a turn: on every model response that is a
 * final answer (no tool-call intent), if `memory.enabled` and a thread id is known (context, else
 * `configurable`), the state's messages plus that answer go to the queue with the agent name and the runtime
 * user id. State is never changed, and the queue coalesces per thread, so only the latest conversation is
 * processed. A run that ends on a clarification question is picked up with the next final answer.
 * Hook: wrapModelCall (DeerFlow uses after_agent; a final answer is where the agent ends, and this adds no graph
 * node).
 */
export class MemoryMiddleware extends DeerflowMiddleware {
  readonly name = "MemoryMiddleware";
  readonly agentName: string;
  readonly memoryConfig: MemoryConfig;
  private queueInstance?: MemoryUpdateQueue;

  constructor(options: MemoryMiddlewareOptions = {}) {
    super();
    this.agentName = options.agentName ?? "default";
    this.memoryConfig = MemoryConfigSchema.parse(options.memoryConfig ?? {});
    this.queueInstance = options.queue;
  }

  /** The update queue (created on first use, so building the middleware does no I/O). */
  get queue(): MemoryUpdateQueue {
    return (this.queueInstance ??= new MemoryUpdateQueue());
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    if (!this.memoryConfig.enabled || !AIMessage.isInstance(response) || hasToolCallIntent(response)) return response as never;
    const { threadId, userId } = runContextOf(request.runtime as RuntimeLike);
    const messages = request.state?.messages ?? request.messages;
    if (typeof threadId === "string" && threadId && messages.length) {
      try {
        this.queue.add({ threadId, userId, agentName: this.agentName, messages: [...messages, response] });
      } catch (err) {
        getLogger().warn({ thread_id: threadId, err: (err as Error).message }, "memory update not queued");
      }
    }
    return response as never;
  }
}
