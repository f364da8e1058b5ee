// Port of DeerFlow agents/middlewares/memory_middleware.py (MemoryMiddleware).
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { MemoryConfigSchema } from "../../config/schema.js";
import { getLogger } from "../../logger.js";
import { MemoryUpdateQueue } from "../memory/memory-queue.js";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent } from "./message-utils.js";
import { contextOf } from "./run-scope.js";

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
    const ctx = contextOf(request.runtime);
    const cfg = (request.runtime?.configurable ?? {}) as Record<string, unknown>;
    const threadId = ctx.thread_id ?? cfg.thread_id;
    const messages = request.state?.messages ?? request.messages;
    if (typeof threadId === "string" && threadId && messages.length) {
      try {
        this.queue.add({ threadId, userId: String(ctx.user_id ?? cfg.user_id ?? "default"), agentName: this.agentName, messages: [...messages, response] });
      } catch (err) {
        getLogger().warn({ thread_id: threadId, err: (err as Error).message }, "memory update not queued");
      }
    }
    return response as never;
  }
}
