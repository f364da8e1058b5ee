// Port of DeerFlow agents/middlewares/clarification_middleware.py (ClarificationMiddleware).
import { createHash } from "node:crypto";
import { ToolMessage } from "@langchain/core/messages";
import type { ToolCallHandler } from "langchain";

type ToolCallRequest = Parameters<ToolCallHandler>[0];
import { DeerflowMiddleware } from "./base.js";
import { formatFormLines, normalizeFields, type FormField } from "./clarification-fields.js";

const ICONS: Record<string, string> = {
  missing_info: "❓",
  ambiguous_requirement: "🤔",
  approach_choice: "🔀",
  risk_confirmation: "⚠️",
  suggestion: "💡",
};

/** One normalized choice of a clarification request. */
export interface ClarificationOption {
  id: string;
  label: string;
  value: string;
}

/** Scalar leaves of a mapping, in source order (DeerFlow flattens XML-to-dict option payloads this way). */
function flattenLeaves(value: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(value)) for (const v of value) flattenLeaves(v, out);
  else if (value && typeof value === "object") for (const v of Object.values(value)) flattenLeaves(v, out);
  else if (typeof value === "string" || typeof value === "number") out.push(value);
  return out;
}

/**
 * Normalizes the `options` argument: a JSON string is decoded first (an array gives its items, a scalar one
 * option, `null` none), a non-JSON string is one option, a mapping is flattened to its scalar leaves; list items
 * that are objects give their `label`/`value`/`text`. XML-like tags are stripped, values trimmed, blanks and
 * duplicates dropped.
 */
export function normalizeOptions(raw: unknown): ClarificationOption[] {
  let value = raw;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      /* a plain string is one option */
    }
  }
  let list: unknown[];
  if (value === null || value === undefined) list = [];
  else if (Array.isArray(value)) list = value;
  else if (typeof value === "object") list = flattenLeaves(value);
  else list = [value];
  const seen = new Set<string>();
  const out: ClarificationOption[] = [];
  for (const item of list) {
    let label: string;
    let value: string;
    if (item && typeof item === "object") {
      const o = item as Record<string, unknown>;
      label = String(o.label ?? o.text ?? o.value ?? "");
      value = String(o.value ?? o.label ?? o.text ?? "");
    } else {
      label = value = String(item ?? "");
    }
    label = label.replace(/<[^>]*>/g, "").trim();
    value = value.replace(/<[^>]*>/g, "").trim() || label;
    if (!label || seen.has(label.toLowerCase())) continue;
    seen.add(label.toLowerCase());
    out.push({ id: `option-${out.length + 1}`, label, value });
  }
  return out;
}

/**
 * Renders the question shown to the user: icon + context (if any), the question, then the form's numbered fields
 * (which take precedence) or the numbered options.
 */
export function formatClarification(args: Record<string, unknown>, options: ClarificationOption[], fields: readonly FormField[] = []): string {
  const icon = ICONS[String(args.clarification_type ?? "missing_info")] ?? "❓";
  const question = String(args.question ?? "").trim();
  const context = typeof args.context === "string" && args.context.trim() ? args.context.trim() : null;
  let text = context ? `${icon} ${context}\n${question}` : `${icon} ${question}`;
  if (fields.length) text += `\n${formatFormLines(fields)}`;
  else if (options.length) text += `\n${options.map((o, i) => `  ${i + 1}. ${o.label}`).join("\n")}`;
  return text;
}

/**
 * Intercepts `ask_clarification` calls (hook: wrapToolCall; other tools pass through) and ends the turn with the
 * formatted question as the tool result, id `clarification:<call id>` (or `clarification:<first 16 hex of the
 * text's sha256>` when the call has no id), artifact `{human_input: {...}}` describing the request for UIs, whose
 * `request_id` is that same id: version 2 with `input_mode: "form"` and the validated `fields` when the call sent a
 * valid form (see `normalizeFields`), else version 1 with `choice_with_other` + `options` or `free_text`. The tool's `returnDirect` flag makes the
 * agent stop after it. With `context.disable_clarification` truthy, the result instead tells the model to
 * proceed on its own, marked `status: "error"` so the loop continues.
 */
export class ClarificationMiddleware extends DeerflowMiddleware {
  readonly name = "ClarificationMiddleware";

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    if (request.toolCall.name !== "ask_clarification") return handler(request);
    const callId = request.toolCall.id;
    const context = (request.runtime?.context ?? {}) as Record<string, unknown>;
    if (context.disable_clarification) {
      return new ToolMessage({
        id: `clarification:${callId ?? "disabled"}`,
        tool_call_id: callId ?? "",
        name: "ask_clarification",
        status: "error",
        content: "Clarification is disabled for this run. Proceed with the most reasonable assumption and state it in your answer.",
      });
    }
    const args = (request.toolCall.args ?? {}) as Record<string, unknown>;
    const options = normalizeOptions(args.options);
    const fields = normalizeFields(args.fields, (raw) => normalizeOptions(raw).map((o) => o.label));
    const text = formatClarification(args, options, fields);
    const requestId = `clarification:${callId || createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
    const payload: Record<string, unknown> = {
      version: fields.length ? 2 : 1,
      kind: "human_input_request",
      source: "ask_clarification",
      input_mode: fields.length ? "form" : options.length ? "choice_with_other" : "free_text",
      request_id: requestId,
      clarification_type: String(args.clarification_type ?? "missing_info"),
      question: String(args.question ?? ""),
      ...(callId ? { tool_call_id: callId } : {}),
      ...("context" in args ? { context: args.context } : {}),
      ...(fields.length ? { fields } : options.length ? { options } : {}),
    };
    return new ToolMessage({
      id: requestId,
      tool_call_id: callId || requestId,
      name: "ask_clarification",
      content: text,
      artifact: { human_input: payload },
    });
  }
}
