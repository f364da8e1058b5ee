// Port of DeerFlow agents/middlewares/tool_error_handling_middleware.py (ToolErrorHandlingMiddleware).
import { ToolMessage } from "@langchain/core/messages";
import { isGraphBubbleUp } from "@langchain/langgraph";
import type { ToolCallHandler } from "langchain";

type ToolCallRequest = Parameters<ToolCallHandler>[0];
import { DeerflowMiddleware } from "./base.js";

const MAX_DETAIL_CHARS = 500;

/** True for errors that must propagate: graph interrupts / bubble-ups and aborts (a cancelled run). */
export function isControlFlowError(err: unknown, signal?: AbortSignal): boolean {
  if (isGraphBubbleUp(err as Error)) return true;
  if (signal?.aborted) return true;
  const name = (err as Error | undefined)?.name;
  return name === "AbortError" || name === "GraphInterrupt" || name === "NodeInterrupt";
}

/** Exception text for the model: message (or type name), cut to 500 chars (first 497 + "..."). */
export function describeToolError(err: unknown): { type: string; detail: string } {
  const type = (err as Error | undefined)?.constructor?.name && err instanceof Error ? err.constructor.name : typeof err;
  let detail = err instanceof Error ? err.message || type : String(err);
  if (detail.length > MAX_DETAIL_CHARS) detail = `${detail.slice(0, MAX_DETAIL_CHARS - 3)}...`;
  return { type, detail };
}

/**
 * Turns a tool exception into an error ToolMessage (`status: "error"`) so the model can recover, instead of
 * failing the run. Graph interrupts and aborts pass through untouched. Content:
 * `Error: Tool '<name>' failed with <Type>: <detail>. Continue with available context, or choose an alternative tool.`
 * (for `task`: `Task failed. Error: <Type>: <detail>. ...`). Hook: wrapToolCall.
 */
export class ToolErrorHandlingMiddleware extends DeerflowMiddleware {
  readonly name = "ToolErrorHandlingMiddleware";

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    try {
      return await handler(request);
    } catch (err) {
      if (isControlFlowError(err, request.runtime?.signal)) throw err;
      const name = request.toolCall.name || "unknown_tool";
      const { type, detail } = describeToolError(err);
      const tail = "Continue with available context, or choose an alternative tool.";
      const content = name === "task" ? `Task failed. Error: ${type}: ${detail}. ${tail}` : `Error: Tool '${name}' failed with ${type}: ${detail}. ${tail}`;
      return new ToolMessage({
        content,
        name,
        tool_call_id: request.toolCall.id || "missing_tool_call_id",
        status: "error",
        ...(name === "task" ? { additional_kwargs: { subagent_status: "failed" } } : {}),
      });
    }
  }
}
