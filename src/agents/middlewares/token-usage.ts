// Port of DeerFlow agents/middlewares/token_usage_middleware.py (TokenUsageMiddleware).
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { currentRunScope } from "../../observability/run-scope.js";
import { runContextOf } from "../run-context.js";
import { DeerflowMiddleware } from "./base.js";
import { textOf } from "./message-utils.js";

/** What one model response's tokens were spent on (`additional_kwargs.token_usage_attribution`). */
export interface TokenUsageAttribution {
  version: 1;
  kind: "todo_update" | "subagent_dispatch" | "tool_batch" | "final_answer" | "thinking";
  /** True when several tool calls share the response's tokens. */
  shared_attribution: boolean;
  tool_call_ids: string[];
  actions: { kind: string; tool_call_id: string; tool_name: string }[];
}

const SEARCH_TOOLS = new Set(["web_search", "web_fetch", "image_search", "tool_search"]);

function actionKind(tool: string): string {
  if (tool === "write_todos") return "todos";
  if (tool === "task") return "subagent";
  if (SEARCH_TOOLS.has(tool)) return "search";
  if (tool === "present_files") return "present_files";
  if (tool === "ask_clarification") return "clarification";
  return "tool";
}

/**
 * The attribution of a response: `todo_update` (only `write_todos` calls), `subagent_dispatch` (any `task` call),
 * `tool_batch` (other tool calls), `final_answer` (text, no calls) or `thinking` (neither), with one action per
 * tool call (`todos`, `subagent`, `search`, `present_files`, `clarification` or `tool`).
 */
export function attributeTokenUsage(message: AIMessage): TokenUsageAttribution {
  const calls = message.tool_calls ?? [];
  let kind: TokenUsageAttribution["kind"];
  if (!calls.length) kind = textOf(message).trim() ? "final_answer" : "thinking";
  else if (calls.every((c) => c.name === "write_todos")) kind = "todo_update";
  else if (calls.some((c) => c.name === "task")) kind = "subagent_dispatch";
  else kind = "tool_batch";
  return {
    version: 1,
    kind,
    shared_attribution: calls.length > 1,
    tool_call_ids: calls.map((c) => c.id ?? ""),
    actions: calls.map((c) => ({ kind: actionKind(c.name), tool_call_id: c.id ?? "", tool_name: c.name })),
  };
}

type Usage = { input_tokens: number; output_tokens: number; total_tokens: number };

/**
 * Subagent usage reported on `task` results (`additional_kwargs.subagent_usage`) after the latest dispatching AI
 * message and not yet folded: the AI message with that usage added, and the tool results marked
 * `subagent_usage_attributed`. Null when there is nothing to fold (idempotent).
 */
export function foldSubagentUsage(messages: readonly BaseMessage[]): BaseMessage[] | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const ai = messages[i];
    if (!AIMessage.isInstance(ai) || !ai.tool_calls?.some((c) => c.name === "task")) continue;
    const taskIds = new Set(ai.tool_calls.filter((c) => c.name === "task").map((c) => c.id));
    const results = messages.slice(i + 1).filter((m): m is ToolMessage => ToolMessage.isInstance(m) && taskIds.has(m.tool_call_id));
    const pending = results.filter((m) => m.additional_kwargs?.subagent_usage && !m.additional_kwargs?.subagent_usage_attributed);
    if (!pending.length) return null;
    const add: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    for (const m of pending) {
      const u = m.additional_kwargs.subagent_usage as Partial<Usage>;
      add.input_tokens += u.input_tokens ?? 0;
      add.output_tokens += u.output_tokens ?? 0;
      add.total_tokens += u.total_tokens ?? (u.input_tokens ?? 0) + (u.output_tokens ?? 0);
    }
    const base = ai.usage_metadata ?? { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    // Built from named fields, never a spread of the instance: a spread carries LangChain's `lc_*` internals into
    // the message's fields, and from there into checkpoints and the wire.
    const folded = new AIMessage({
      id: ai.id,
      name: ai.name,
      invalid_tool_calls: ai.invalid_tool_calls,
      content: ai.content,
      tool_calls: ai.tool_calls,
      additional_kwargs: ai.additional_kwargs,
      response_metadata: ai.response_metadata,
      usage_metadata: { ...base, input_tokens: base.input_tokens + add.input_tokens, output_tokens: base.output_tokens + add.output_tokens, total_tokens: base.total_tokens + add.total_tokens },
    });
    const marked = pending.map(
      (m) => new ToolMessage({ id: m.id, response_metadata: m.response_metadata, content: m.content, tool_call_id: m.tool_call_id, name: m.name, status: m.status, artifact: m.artifact, additional_kwargs: { ...m.additional_kwargs, subagent_usage_attributed: true } }),
    );
    return [folded, ...marked];
  }
  return null;
}

/**
 * Accounts for tokens per model response: logs "LLM token usage: input=<n> output=<n> total=<n>" (with the run's
 * `run_id`, `thread_id` and `request_id`) when the response carries usage, stamps `additional_kwargs.token_usage_attribution` ({@link attributeTokenUsage}; skipped
 * when identical), and folds subagent usage reported on the preceding `task` results into the dispatching AI
 * message ({@link foldSubagentUsage}) through a state update. Hook: wrapModelCall (DeerFlow uses after_model).
 */
export class TokenUsageMiddleware extends DeerflowMiddleware {
  readonly name = "TokenUsageMiddleware";

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    if (!AIMessage.isInstance(response)) return response as never;
    const usage = response.usage_metadata;
    if (usage) {
      // The run's logger carries run_id, thread_id and request_id; outside a gateway run, the context's ids.
      const ctx = runContextOf(request.runtime as never);
      const log = currentRunScope()?.log ?? getLogger().child({ run_id: ctx.runId, thread_id: ctx.threadId });
      log.info(
        { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, total_tokens: usage.total_tokens, input_token_details: usage.input_token_details, output_token_details: usage.output_token_details },
        `LLM token usage: input=${usage.input_tokens} output=${usage.output_tokens} total=${usage.total_tokens}`,
      );
    }
    const attribution = attributeTokenUsage(response);
    if (JSON.stringify(response.additional_kwargs?.token_usage_attribution) !== JSON.stringify(attribution)) {
      // The response is this call's own fresh message; stamping it in place keeps the object every outer
      // middleware and the agent node hold.
      response.additional_kwargs = { ...(response.additional_kwargs ?? {}), token_usage_attribution: attribution };
    }
    const folded = foldSubagentUsage(request.state?.messages ?? request.messages);
    return (folded ? new Command({ update: { messages: folded } }) : response) as never;
  }
}
