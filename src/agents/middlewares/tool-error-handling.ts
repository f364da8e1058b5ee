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

/**
 * Exception text for the model: the message (or type name) of the tool's own error (unwrapped from langchain's
 * ToolInvocationError), without stack frames, cut to 500 chars (first 497 + "...").
 */
export function describeToolError(err: unknown): { type: string; detail: string } {
  // langchain wraps a tool's own error in ToolInvocationError, whose message embeds the cause's stack trace.
  const root = err instanceof Error && err.constructor?.name === "ToolInvocationError" && err.cause instanceof Error ? err.cause : err;
  const type = (root as Error | undefined)?.constructor?.name && root instanceof Error ? root.constructor.name : typeof root;
  let detail = root instanceof Error ? root.message || type : String(root);
  detail = stripStackTrace(detail);
  if (detail.length > MAX_DETAIL_CHARS) detail = `${detail.slice(0, MAX_DETAIL_CHARS - 3)}...`;
  return { type, detail };
}

/** Removes stack-frame lines (`    at fn (/path/file.ts:1:2)`) and trailing blank lines: host paths never reach the model. */
export function stripStackTrace(text: string): string {
  return text
    .split("\n")
    .filter((line) => !/^\s+at\s/.test(line))
    .join("\n")
    .trimEnd();
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
