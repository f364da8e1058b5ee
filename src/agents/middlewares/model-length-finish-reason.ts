// Port of DeerFlow agents/middlewares/model_length_finish_reason_middleware.py (ModelLengthFinishReasonMiddleware,
// upstream #4271) with its default detectors (model_length_termination_detectors.py).
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { runContextOf } from "../run-context.js";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent, recordStopReason, textOf } from "./message-utils.js";

/** The run's `stop_reason` when the provider cut the final answer at its output limit. */
export const MODEL_LENGTH_CAPPED_STOP_REASON = "model_length_capped";

/** The provider's length signal: OpenAI `finish_reason=length`, Anthropic `stop_reason=max_tokens`, Gemini `MAX_TOKENS`. */
function lengthSignal(message: AIMessage): string | null {
  const meta = message.response_metadata ?? {};
  const finish = meta.finish_reason ?? meta.stop_reason ?? message.additional_kwargs?.finish_reason;
  if (finish === "length" || finish === "max_tokens" || finish === "MAX_TOKENS") return `${meta.finish_reason !== undefined ? "finish_reason" : "stop_reason"}=${finish}`;
  return null;
}

/**
 * Marks a run whose final answer the provider cut off: an AI message with visible text, no tool-call intent and
 * a length finish reason sets the run's `stop_reason` to `model_length_capped` (run metadata and the run
 * record), records `additional_kwargs.model_length_termination`, and writes a `{type: "model_length_capped",
 * signal}` custom stream event. The content is never rewritten; a capped message with tool calls or no text is
 * left to the other guards. Hook: wrapModelCall.
 */
export class ModelLengthFinishReasonMiddleware extends DeerflowMiddleware {
  readonly name = "ModelLengthFinishReasonMiddleware";

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    if (!AIMessage.isInstance(response) || hasToolCallIntent(response) || !textOf(response).trim()) return response as never;
    const signal = lengthSignal(response);
    if (!signal) return response as never;
    recordStopReason(runContextOf(request.runtime as never).raw, MODEL_LENGTH_CAPPED_STOP_REASON);
    response.additional_kwargs = { ...response.additional_kwargs, model_length_termination: { signal, stop_reason: MODEL_LENGTH_CAPPED_STOP_REASON } };
    try {
      (request.runtime as { writer?: (c: unknown) => void } | undefined)?.writer?.({ type: MODEL_LENGTH_CAPPED_STOP_REASON, signal });
    } catch {
      // Best effort: a closed stream must not fail the run.
    }
    return response as never;
  }
}
