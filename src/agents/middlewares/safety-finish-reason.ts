// Port of DeerFlow agents/middlewares/safety_finish_reason_middleware.py (SafetyFinishReasonMiddleware).
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { ValidationError } from "../../errors.js";
import { getLogger } from "../../logger.js";
import { DeerflowMiddleware } from "./base.js";
import { recordStopReason, rewriteAiMessage, textOf } from "./message-utils.js";
import { runContextOf, type RuntimeLike } from "../run-context.js";
import { recordMiddlewareEvent } from "../run-journal-sink.js";

/** What a detector found: which field said what. */
export interface SafetyHit {
  detector: string;
  reason_field: string;
  reason_value: string;
  extras?: Record<string, unknown>;
}

/** Recognises a provider's safety stop on an AI message; returns null when there is none. */
export interface SafetyDetector {
  name: string;
  detect(message: AIMessage): SafetyHit | null;
}

const GEMINI_SAFETY = new Set(["SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"]);

/** Reads `field` from `response_metadata`, then `additional_kwargs`. */
function field(message: AIMessage, key: string): unknown {
  return message.response_metadata?.[key] ?? message.additional_kwargs?.[key];
}

/** The built-in detectors: OpenAI-compatible `content_filter`, Anthropic `refusal`, Gemini safety finish reasons. */
export const BUILTIN_SAFETY_DETECTORS: readonly SafetyDetector[] = [
  {
    name: "OpenAICompatibleContentFilterDetector",
    detect: (m) => (field(m, "finish_reason") === "content_filter" ? { detector: "OpenAICompatibleContentFilterDetector", reason_field: "finish_reason", reason_value: "content_filter" } : null),
  },
  {
    name: "AnthropicRefusalDetector",
    detect: (m) => (field(m, "stop_reason") === "refusal" ? { detector: "AnthropicRefusalDetector", reason_field: "stop_reason", reason_value: "refusal" } : null),
  },
  {
    name: "GeminiSafetyDetector",
    detect: (m) => {
      const v = field(m, "finish_reason");
      return typeof v === "string" && GEMINI_SAFETY.has(v.toUpperCase()) ? { detector: "GeminiSafetyDetector", reason_field: "finish_reason", reason_value: v } : null;
    },
  },
];

/**
 * The detectors named by the `safety_finish_reason.detectors` config: null means the built-ins; each entry's
 * `use:` must name a built-in detector (by class name, with or without a `module:` prefix).
 * @throws ValidationError for an explicit empty list. @throws TypeError naming an entry that is not a detector.
 */
export function resolveSafetyDetectors(entries: readonly { use: string }[] | null | undefined): SafetyDetector[] {
  if (entries === null || entries === undefined) return [...BUILTIN_SAFETY_DETECTORS];
  if (!entries.length) throw new ValidationError("safety_finish_reason.detectors must not be an empty list; omit it to use the built-in detectors");
  return entries.map((e) => {
    const name = e.use.slice(e.use.lastIndexOf(":") + 1);
    const found = BUILTIN_SAFETY_DETECTORS.find((d) => d.name === name);
    if (!found) throw new TypeError(`safety_finish_reason detector '${e.use}' is not a safety detector; known: ${BUILTIN_SAFETY_DETECTORS.map((d) => d.name).join(", ")}`);
    return found;
  });
}

const isBlank = (m: AIMessage) => !textOf(m).trim() && !(Array.isArray(m.content) && m.content.some((b) => typeof b === "object" && b.type !== "text"));

/**
 * Turns a provider safety stop into a clean end of the turn. Only a response with tool calls or blank content is
 * examined (visible text without tool calls is left alone). On the first detector hit (a throwing detector is
 * logged and skipped): tool calls are cleared (structured, raw and `function_call`), an explanation is appended
 * (tool-suppression wording when calls were dropped, "returned no content" wording when the answer was blank),
 * the provider's finish reason is kept, `additional_kwargs.safety_termination` records {detector, reason_field,
 * reason_value, suppressed_tool_call_count, suppressed_tool_call_names, extras}, `context.stop_reason` becomes
 * `safety_capped`, a `{type: "safety_termination", ...}` custom stream event is written (best effort) and a
 * warning is logged; the message id is kept. Hook: wrapModelCall (DeerFlow uses after_model).
 */
export class SafetyFinishReasonMiddleware extends DeerflowMiddleware {
  readonly name = "SafetyFinishReasonMiddleware";
  readonly detectors: SafetyDetector[];

  /** @param detectors Config entries (`safety_finish_reason.detectors`); null for the built-ins. */
  constructor(detectors: readonly { use: string }[] | null = null) {
    super();
    this.detectors = resolveSafetyDetectors(detectors);
  }

  /** The first detector hit on `message`, or null. */
  detect(message: AIMessage): SafetyHit | null {
    for (const d of this.detectors) {
      try {
        const hit = d.detect(message);
        if (hit) return hit;
      } catch (err) {
        getLogger().warn({ detector: d.name, err: (err as Error).message }, "safety detector failed; skipped");
      }
    }
    return null;
  }

  /** The response with the safety stop applied, or the same object when nothing applies. */
  apply(message: AIMessage, runtime?: RuntimeLike & { writer?: (chunk: unknown) => void }): AIMessage {
    const calls = message.tool_calls ?? [];
    if (!calls.length && !isBlank(message)) return message;
    const hit = this.detect(message);
    if (!hit) return message;
    const names = calls.map((c) => c.name);
    const signal = `${hit.reason_field}=${hit.reason_value}`;
    const explanation = calls.length
      ? `The model provider stopped this response because of a safety-related signal (${signal}). The ${calls.length} tool call(s) it requested (${names.join(", ")}) were suppressed and not executed.`
      : `The model provider returned no content because of a safety-related signal (${signal}). Try rephrasing the request.`;
    const out = rewriteAiMessage(message, { toolCalls: [], append: explanation });
    // The provider's finish reason stays as it was (rewriteAiMessage would turn a tool-call reason into `stop`).
    if (message.response_metadata?.finish_reason !== undefined) out.response_metadata = { ...out.response_metadata, finish_reason: message.response_metadata.finish_reason };
    const termination = { ...hit, suppressed_tool_call_count: calls.length, suppressed_tool_call_names: names, extras: hit.extras ?? {} };
    out.additional_kwargs = { ...out.additional_kwargs, safety_termination: termination };
    recordStopReason(runContextOf(runtime).raw, "safety_capped");
    try {
      runtime?.writer?.({ type: "safety_termination", ...termination });
    } catch {
      // Best effort: a closed stream must not fail the run.
    }
    // Audit copy as upstream: names, count and ids of the suppressed calls, never their (filtered) arguments.
    recordMiddlewareEvent(runtime, "safety_termination", {
      name: "SafetyFinishReasonMiddleware",
      hook: "after_model",
      action: "suppress_tool_calls",
      changes: { ...termination, suppressed_tool_call_ids: calls.map((c) => c.id).filter(Boolean), message_id: message.id ?? null },
    });
    getLogger().warn({ ...termination }, `model response stopped by a provider safety signal (${signal})`);
    return out;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    return (AIMessage.isInstance(response) ? this.apply(response, request.runtime as never) : response) as never;
  }
}
