// Message helpers shared by the middlewares (no DeerFlow counterpart: upstream repeats these per middleware).
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";

/** Text of a message's content: string content, or the `text` blocks of list content joined. */
export function textOf(message: BaseMessage): string {
  const c = message.content;
  if (typeof c === "string") return c;
  return c.map((b) => (typeof b === "string" ? b : b.type === "text" ? String((b as { text?: unknown }).text ?? "") : "")).join("");
}

/** The block UploadsMiddleware puts before the user's text, and the blank line after it. */
const UPLOADS_BLOCK = /^\s*<current_uploads>[\s\S]*?<\/current_uploads>\s*/;

/**
 * What the user typed in a human message, without what the server added: `additional_kwargs.original_user_content`
 * when UploadsMiddleware recorded it (clients cannot set it: the run service strips it), else the text with a
 * leading `<current_uploads>` block removed. An attachment-only message gives `""`.
 */
export function userTypedText(message: BaseMessage): string {
  const original = message.additional_kwargs?.original_user_content;
  if (typeof original === "string") return original;
  return textOf(message).replace(UPLOADS_BLOCK, "");
}

/** A HumanMessage for the model only: named `name`, flagged `hide_from_ui` so UIs never show it. */
export function hiddenHumanMessage(content: HumanMessage["content"], name: string, extra: Record<string, unknown> = {}): HumanMessage {
  return new HumanMessage({ content, name, additional_kwargs: { hide_from_ui: true, ...extra } });
}

const TOOL_FINISH_REASONS = new Set(["tool_calls", "function_call", "tool_use"]);

/**
 * True when an AI message means to call a tool: structured or invalid tool calls, raw provider `tool_calls`,
 * a `function_call`, or a tool-call finish reason.
 */
export function hasToolCallIntent(message: AIMessage): boolean {
  if (message.tool_calls?.length || message.invalid_tool_calls?.length) return true;
  const kw = message.additional_kwargs ?? {};
  if ((Array.isArray(kw.tool_calls) && kw.tool_calls.length) || kw.function_call) return true;
  const finish = message.response_metadata?.finish_reason ?? message.response_metadata?.stop_reason;
  return typeof finish === "string" && TOOL_FINISH_REASONS.has(finish);
}

/** Options of {@link rewriteAiMessage}. */
export interface RewriteOptions {
  /** Text appended after the existing content (separated by a blank line). */
  append?: string;
  /** Tool calls to keep; `[]` clears them. Default: unchanged. */
  toolCalls?: AIMessage["tool_calls"];
  /** Extra `response_metadata` keys. */
  metadata?: Record<string, unknown>;
}

/**
 * A copy of `message` (same id) with some tool calls kept and/or text appended. Raw provider `tool_calls` are
 * kept in sync with the structured ones (dropped when none remain, as is `function_call`), and a tool-call
 * finish reason becomes `stop` when no call remains.
 */
export function rewriteAiMessage(message: AIMessage, options: RewriteOptions): AIMessage {
  const toolCalls = options.toolCalls ?? message.tool_calls ?? [];
  let content: AIMessage["content"] = message.content;
  if (options.append) {
    content = typeof content === "string" ? (content.trim() ? `${content}\n\n${options.append}` : options.append) : [...content, { type: "text", text: options.append }];
  }
  const kwargs: Record<string, unknown> = { ...(message.additional_kwargs ?? {}) };
  if (toolCalls.length === 0) {
    delete kwargs.tool_calls;
    delete kwargs.function_call;
  } else if (Array.isArray(kwargs.tool_calls)) {
    const keep = new Set(toolCalls.map((c) => c.id));
    kwargs.tool_calls = (kwargs.tool_calls as { id?: string }[]).filter((c) => keep.has(c.id));
  }
  const metadata: Record<string, unknown> = { ...(message.response_metadata ?? {}), ...(options.metadata ?? {}) };
  if (toolCalls.length === 0 && TOOL_FINISH_REASONS.has(String(metadata.finish_reason))) metadata.finish_reason = "stop";
  return new AIMessage({
    id: message.id,
    name: message.name,
    content: content as string,
    tool_calls: toolCalls,
    invalid_tool_calls: toolCalls.length ? message.invalid_tool_calls : [],
    additional_kwargs: kwargs,
    response_metadata: metadata,
    usage_metadata: message.usage_metadata,
  });
}

/** Writes `context.stop_reason` when the context is a writable object (DeerFlow records why a run stopped there). */
export function recordStopReason(context: unknown, reason: string): void {
  if (context && typeof context === "object" && !Object.isFrozen(context)) (context as Record<string, unknown>).stop_reason = reason;
}
