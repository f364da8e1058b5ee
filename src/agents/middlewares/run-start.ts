// The run-start state writes of ThreadDataMiddleware and UploadsMiddleware, made from the model call instead of
// from graph nodes: DeerFlow runs both as before_agent hooks, and in LangGraph each such hook is a node and a
// superstep of its own (a checkpoint, a task, a `values` frame). Measured on the default chain: the two nodes were
// about a quarter of an agent run's CPU. Writing the same update next to the model's answer, in the model_request
// step, leaves the thread's state after the step identical and the model's input identical.
import { HumanMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { DeerflowMiddleware } from "./base.js";

/** The request property the run-start middlewares share one pending update through (object spread keeps it). */
const RUN_START = Symbol.for("deerflow.runStart");

/**
 * The same pending updates keyed by the model call's state `messages` array. langchain hands every wrapper of one
 * model call that one array (it rebuilds `request.state` per wrapper from the node's state), so an inner run-start
 * middleware still finds the outer one's update when a middleware between them passes on a request it built
 * field by field, which drops the symbol property; without it each would commit its own rewrite and the outer
 * one's later write would erase the inner one's.
 */
const pendingByState = new WeakMap<BaseMessage[], PendingRunStart>();

/**
 * The writes of a run whose first model call failed, keyed by the run context object: a node that throws saves
 * nothing, so the run's worker applies them afterwards ({@link takeUnsavedRunStartWrites}), as DeerFlow's
 * before_agent steps were saved before the model ran.
 */
const unsavedByContext = new WeakMap<object, PendingRunStart>();

/** The channel writes a pending update stands for (the rewritten message included), or null for none. */
function writesOf(pending: PendingRunStart): Record<string, unknown> | null {
  const writes: Record<string, unknown> = { ...pending.update };
  if (pending.rewritten) writes.messages = [pending.message];
  return Object.keys(writes).length ? writes : null;
}

/**
 * The run-start writes (`thread_data`, `uploaded_files`, the rewritten human message) of the run whose context is
 * `context`, when its first model call failed before they could be saved; null otherwise. Each is handed out once.
 * The caller saves them to the thread (the gateway's worker uses `graph.updateState`).
 */
export function takeUnsavedRunStartWrites(context: unknown): Record<string, unknown> | null {
  if (!context || typeof context !== "object") return null;
  const pending = unsavedByContext.get(context);
  unsavedByContext.delete(context);
  return pending ? writesOf(pending) : null;
}

/** What the run-start middlewares of one model call have written so far; the outermost one commits it. */
interface PendingRunStart {
  /** The newest human message as rewritten so far (same id as the one in state). */
  message: BaseMessage;
  /** Whether a middleware rewrote `message`. */
  rewritten: boolean;
  /** Channel writes other than `messages`. */
  update: Record<string, unknown>;
}

/** The runtime a run-start update reads: the run context and `configurable`. */
export interface RunStartRuntime {
  context?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
}

/** A run-start update: the state writes of one middleware's DeerFlow before_agent hook. */
export type RunStartUpdate = Record<string, unknown> & { messages?: BaseMessage[] };

type RunStartRequest = ModelRequest & { [RUN_START]?: PendingRunStart };

/**
 * Base of the middlewares whose DeerFlow hook is `before_agent` and whose whole effect is a state write about the
 * run's newest human message (ThreadData, Uploads). The write is made by `wrapModelCall` on the model call that
 * answers that message, which is the run's first model call: the newest message in state is human exactly then.
 * The model sees the rewritten message; the outermost run-start middleware returns one Command carrying every
 * run-start middleware's writes next to the model's answer, so the rewrites of two middlewares of the same message
 * compose (each builds on the other's) instead of the later write replacing the earlier one.
 * A run whose model is never called (an immediate interrupt, a resume straight into tools) writes nothing here.
 */
export abstract class RunStartMiddleware extends DeerflowMiddleware {
  /**
   * The state update for a run starting on `state` (DeerFlow's before_agent result), or undefined for none.
   * Pure apart from what the subclass documents (ThreadData may create directories).
   * @param state The graph state as the model call sees it: `messages`, with the newest human message as rewritten
   *   by run-start middlewares further out.
   * @param runtime The run's context and `configurable`.
   */
  abstract runStartUpdate(state: { messages: BaseMessage[] }, runtime: RunStartRuntime): RunStartUpdate | undefined;

  /** Applies {@link runStartUpdate} when the newest message in state is human, then calls the model. */
  async wrapModelCall(request: ModelRequest, handler: (request: ModelRequest) => unknown): Promise<AIMessage | Command> {
    const stateMessages: BaseMessage[] = request.state?.messages ?? request.messages;
    const newest = stateMessages.at(-1);
    if (!newest || !HumanMessage.isInstance(newest)) return (await handler(request)) as AIMessage | Command;
    const stateKey: BaseMessage[] | undefined = request.state?.messages;
    const outer = (request as RunStartRequest)[RUN_START] ?? (stateKey ? pendingByState.get(stateKey) : undefined);
    const pending: PendingRunStart = outer ?? { message: newest, rewritten: false, update: {} };
    const update = this.runStartUpdate({ messages: pending.rewritten ? [...stateMessages.slice(0, -1), pending.message] : stateMessages }, (request.runtime ?? {}) as RunStartRuntime);
    if (update) {
      const { messages, ...rest } = update;
      Object.assign(pending.update, rest);
      const message = messages?.find((m) => m.id === newest.id);
      if (message) {
        pending.message = message;
        pending.rewritten = true;
      }
    }
    const messages = pending.rewritten ? request.messages.map((m) => (m.id === newest.id ? pending.message : m)) : request.messages;
    if (outer) return (await handler({ ...request, messages, [RUN_START]: pending } as RunStartRequest)) as AIMessage | Command;
    if (stateKey) pendingByState.set(stateKey, pending);
    const context = request.runtime?.context;
    let response: AIMessage | Command;
    try {
      response = (await handler({ ...request, messages, [RUN_START]: pending } as RunStartRequest)) as AIMessage | Command;
    } catch (err) {
      if (context && typeof context === "object") unsavedByContext.set(context, pending);
      throw err;
    } finally {
      if (stateKey) pendingByState.delete(stateKey);
    }
    const writes = writesOf(pending);
    if (!writes) return response;
    // The model's message reaches state through langchain (the AIMessage an inner handler returned); these writes
    // ride next to it. A Command from further in (no AIMessage to stand for it) keeps its own fields and writes.
    if (isCommand(response)) {
      const inner = response.update && typeof response.update === "object" && !Array.isArray(response.update) ? (response.update as Record<string, unknown>) : {};
      const innerMessages = Array.isArray(inner.messages) ? inner.messages : [];
      return new Command({ graph: response.graph, goto: response.goto, resume: response.resume, update: { ...inner, ...writes, messages: [...innerMessages, ...((writes.messages as BaseMessage[]) ?? [])] } });
    }
    return new Command({ update: writes });
  }
}
