// Port of DeerFlow agents/middlewares/mcp_routing_middleware.py (McpRoutingMiddleware): deferred MCP tools whose
// routing keywords appear in the user's latest message are promoted without a tool_search round trip.
import { Command } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import type { McpRoutingIndex } from "../../tools/mcp-routing.js";
import type { Promoted } from "../thread-state.js";
import { DeferredToolFilterStateSchema } from "./deferred-tool-filter.js";
import { DeerflowMiddleware } from "./base.js";
import { textOf } from "./message-utils.js";
import { latestRealUserMessage } from "./skill-activation.js";
import type { BaseMessage } from "@langchain/core/messages";

/**
 * Promotes deferred MCP tools from their routing hints (`routing: {mode: prefer, keywords, priority}` in
 * extensions_config.json): before each model call, the deferred tools whose keywords occur (case-insensitively) in
 * the latest user message (as typed, before upload notes) are ranked by priority (then name) and the first
 * `top_k` (`tool_search.auto_promote_top_k`, 1-5) are promoted under the build's catalog hash, as a `tool_search`
 * would: the model call already gets their schemas (DeferredToolFilterMiddleware, inner, asks {@link matched}),
 * and the promotion is written to the thread's `promoted` state, so the calls run and later turns keep them. It
 * neither hides nor runs tools. Placed before DeferredToolFilterMiddleware (upstream asserts the same order). Hook: wrapModelCall (the state write is a Command beside the model's
 * message, so no graph node is added).
 */
export class McpRoutingMiddleware extends DeerflowMiddleware {
  readonly name = "McpRoutingMiddleware";
  readonly stateSchema = DeferredToolFilterStateSchema;
  private readonly memo = new WeakMap<readonly BaseMessage[], string[]>();
  private readonly routes: Array<[string, number, string[]]>;

  /**
   * @param index Routes of the deferred tools of this build (other names are ignored by the caller's choice).
   * @param catalogHash The deferred catalog's hash. @param topK Most tools promoted per model call (clamped 1-5).
   */
  constructor(index: McpRoutingIndex, private readonly catalogHash: string, private readonly topK: number) {
    super();
    this.topK = Math.min(5, Math.max(1, Math.trunc(topK) || 1));
    this.routes = [...index].map(([name, r]) => [name, r.priority, r.keywords.map((k) => k.toLowerCase())]);
  }

  /** The names the latest user message promotes (ranked, at most top_k). */
  matched(messages: readonly BaseMessage[]): string[] {
    // Asked twice per model call (here and by DeferredToolFilter) with the same state array.
    let names = this.memo.get(messages);
    if (!names) this.memo.set(messages, (names = this.match(messages)));
    return names;
  }

  private match(messages: readonly BaseMessage[]): string[] {
    const target = latestRealUserMessage(messages);
    if (!target) return [];
    const original = target.additional_kwargs?.original_user_content;
    const text = (typeof original === "string" ? original : textOf(target)).toLowerCase();
    if (!text) return [];
    return this.routes
      .filter(([, , keywords]) => keywords.some((k) => text.includes(k)))
      .sort(([a, p], [b, q]) => q - p || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, this.topK)
      .map(([name]) => name);
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const state = request.state as { messages?: BaseMessage[]; promoted?: Promoted | null } | undefined;
    const names = this.matched(state?.messages ?? request.messages);
    const current = state?.promoted?.catalog_hash === this.catalogHash ? state.promoted.names : [];
    if (!names.length || names.every((n) => current.includes(n))) return handler(request) as never;
    getLogger().debug({ names, catalog: this.catalogHash.slice(0, 8) }, "MCP routing auto-promoted deferred tools");
    // DeferredToolFilter (inner) binds `names` on this call already; the Command writes the promotion for the tool
    // calls and later turns. The agent node keeps the model's message (it tracks the innermost AI message).
    await handler(request);
    return new Command({ update: { promoted: { catalog_hash: this.catalogHash, names } } }) as never;
  }
}
