// Port of DeerFlow agents/middlewares/terminal_response_middleware.py (TerminalResponseMiddleware), as a model-call
// wrapper (no graph node): a tool-using turn never ends on an empty answer.
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent, hiddenHumanMessage, textOf } from "./message-utils.js";

/** The reminder sent with the one retry (upstream `_RECOVERY_PROMPT`). */
export const RECOVERY_PROMPT =
  "<system_reminder>\nYour previous response after the tool execution was empty. Review the tool results already present in the conversation and provide a concise, user-visible final response. Do not call another tool unless it is strictly necessary.\n</system_reminder>";
/** The answer when the retry is empty too (upstream `_FALLBACK_CONTENT`). */
export const FALLBACK_CONTENT = "The model completed the tool run but returned no final response, including after one automatic retry. Please try again or use a different model.";

/** Whether a tool result follows the latest user message (the turn used tools). */
function toolResultThisTurn(messages: readonly BaseMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (ToolMessage.isInstance(m)) return true;
    if (m.getType() === "human" && !m.additional_kwargs?.hide_from_ui) return false;
  }
  return false;
}

const isEmptyTerminal = (r: unknown): r is AIMessage => AIMessage.isInstance(r) && !hasToolCallIntent(r) && !textOf(r).trim();

/**
 * When the model answers a turn that ran tools with no visible text and no tool call, asks once more with
 * upstream's recovery reminder (a hidden message, for that call only); if that answer is empty too, the turn ends
 * with upstream's fallback text (flagged `deerflow_error_fallback`, `error_reason` saying why). Turns without a
 * tool result are left alone. Hook: wrapModelCall.
 */
export class TerminalResponseMiddleware extends DeerflowMiddleware {
  readonly name = "TerminalResponseMiddleware";

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const first = await handler(request);
    if (!isEmptyTerminal(first) || !toolResultThisTurn(request.messages)) return first as never;
    const retry = await handler({ ...request, messages: [...request.messages, hiddenHumanMessage(RECOVERY_PROMPT, "terminal_response_recovery")] });
    if (!isEmptyTerminal(retry)) return retry as never;
    return new AIMessage({
      id: retry.id,
      content: FALLBACK_CONTENT,
      additional_kwargs: { deerflow_error_fallback: true, error_type: "EmptyTerminalResponse", error_reason: "Model returned an empty terminal response after one retry" },
      response_metadata: retry.response_metadata,
      usage_metadata: retry.usage_metadata,
    }) as never;
  }
}
