// Port of DeerFlow agents/middlewares/deferred_tool_filter_middleware.py (DeferredToolFilterMiddleware).
import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { StateSchema } from "@langchain/langgraph";
import type { ModelRequest, ToolCallHandler } from "langchain";
import { ThreadStateFields, type Promoted } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/**
 * State keys of DeferredToolFilterMiddleware and McpRoutingMiddleware (one instance for every build: zod compiles
 * a parser per instance).
 */
export const DeferredToolFilterStateSchema = new StateSchema({ promoted: ThreadStateFields.promoted });

/**
 * Hides deferred tools until `tool_search` promotes them. `wrapModelCall` removes from the bound tools every
 * deferred name not in `state.promoted` under the same catalog hash (a promotion made for another catalog does
 * not count); `wrapToolCall` answers a call to a hidden deferred tool with an error result (status `error`)
 * "Error: Tool '<name>' is deferred and has not been promoted yet. Call tool_search first ...". With no deferred
 * names both hooks pass everything through. With `routed` (McpRoutingMiddleware's keyword match), the names it
 * promotes for the latest user message are bound on the model call that writes their promotion (a middleware's
 * request state is the graph's, so the write is only seen from the next step on).
 */
export class DeferredToolFilterMiddleware extends DeerflowMiddleware {
  readonly name = "DeferredToolFilterMiddleware";
  readonly stateSchema = DeferredToolFilterStateSchema;
  readonly deferred: ReadonlySet<string>;
  readonly catalogHash: string;

  /**
   * @param deferred Names of the deferred tools. @param catalogHash Hash of their catalog (see `catalogHash`).
   * @param routed McpRoutingMiddleware of the same build, when it has routes.
   */
  constructor(deferred: Iterable<string>, catalogHash: string, private readonly routed?: { matched(messages: readonly BaseMessage[]): string[] }) {
    super();
    this.deferred = new Set(deferred);
    this.catalogHash = catalogHash;
  }

  /** Names promoted for this catalog. */
  promotedNames(promoted: Promoted | null | undefined): Set<string> {
    return new Set(promoted && promoted.catalog_hash === this.catalogHash ? promoted.names : []);
  }

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    if (!this.deferred.size) return handler(request) as never;
    const promoted = this.promotedNames((request.state as { promoted?: Promoted | null } | undefined)?.promoted);
    if (this.routed) for (const n of this.routed.matched(request.state?.messages ?? request.messages)) promoted.add(n);
    const tools = (request.tools ?? []).filter((t) => {
      const name = (t as { name?: string }).name;
      return !name || !this.deferred.has(name) || promoted.has(name);
    });
    return handler({ ...request, tools }) as never;
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const name = request.toolCall.name;
    if (this.deferred.has(name) && !this.promotedNames((request.state as { promoted?: Promoted | null } | undefined)?.promoted).has(name)) {
      return new ToolMessage({
        content: `Error: Tool '${name}' is deferred and has not been promoted yet. Call tool_search first (e.g. query "select:${name}") to load it, then call it again.`,
        tool_call_id: request.toolCall.id ?? "",
        name,
        status: "error",
      });
    }
    return handler(request);
  }
}
