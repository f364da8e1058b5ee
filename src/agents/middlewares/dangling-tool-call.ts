// Port of DeerFlow agents/middlewares/dangling_tool_call_middleware.py (DanglingToolCallMiddleware).
import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { DeerflowMiddleware } from "./base.js";

interface Call {
  id: string;
  name: string;
  invalid?: string;
}

/** Longest parser error shown to the model. */
const MAX_PARSER_ERROR = 500;

/**
 * The parser error of an invalid tool call without the arguments it failed on: Node's JSON.parse quotes the start
 * of its input (`Unexpected token 'x', "{bad..." is not valid JSON`), and a model told its own malformed payload
 * back tends to resend it (upstream issue #2894). Cut at the quote, and at any echo of the raw arguments.
 */
export function parserError(error: unknown, rawArgs: unknown): string {
  let text = typeof error === "string" ? error : "";
  const quoted = text.search(/,?\s*"/);
  if (quoted !== -1 && /is not valid JSON/.test(text.slice(quoted))) text = `${text.slice(0, quoted)} (not valid JSON)`;
  const raw = typeof rawArgs === "string" ? rawArgs.trim() : "";
  const echo = raw.length >= 4 ? text.indexOf(raw.slice(0, 12)) : -1;
  if (echo !== -1) text = text.slice(0, echo).trimEnd();
  return text.slice(0, MAX_PARSER_ERROR);
}

/**
 * The synthetic result of a call whose arguments did not parse (upstream `_synthetic_tool_message_content`): the
 * tool failed before execution, with the parser error, never the arguments. A `write_file` call gets the advice
 * upstream gives for its usual cause, one huge Markdown payload.
 */
export function invalidCallResult(name: string, error: string): string {
  const detail = error ? ` Parser error: ${error}` : "";
  if (name === "write_file") {
    return `[write_file failed before execution: its arguments were not valid JSON, so nothing was written. Large Markdown content with unescaped quotes, backslashes or code fences usually causes this: do not resend the same payload; give the content as plain text in your reply, or write the file in smaller parts.${detail}]`;
  }
  return `[${name} failed before execution: its arguments were not valid JSON, so the tool did not run.${detail}]`;
}

/**
 * Repairs the outgoing message list so every tool call of an AI message is answered right after it, which
 * providers require. On the request only (state is untouched): blank call ids get stable synthetic ids
 * (`deerflow_synthetic_tool_call_<msgIdx>_<source>_<pos>`), blank names become `unknown_tool`, results are
 * regrouped after their call in call order, orphan results are dropped, and an unanswered call gets a
 * synthetic error result ("interrupted", or "arguments were invalid" for a call whose arguments failed to
 * parse). Returns the input list itself when nothing needed repair.
 */
export function repairToolCallHistory(messages: BaseMessage[]): { messages: BaseMessage[]; orphans: number; placeholders: number } {
  const results = new Map<string, ToolMessage>();
  for (const m of messages) if (ToolMessage.isInstance(m) && m.tool_call_id && !results.has(m.tool_call_id)) results.set(m.tool_call_id, m);
  const used = new Set<ToolMessage>();
  const out: BaseMessage[] = [];
  let placeholders = 0;
  let changed = false;
  messages.forEach((m, msgIdx) => {
    if (ToolMessage.isInstance(m)) return;
    if (!AIMessage.isInstance(m) || (!m.tool_calls?.length && !m.invalid_tool_calls?.length)) {
      out.push(m);
      return;
    }
    let rewritten = false;
    const valid = (m.tool_calls ?? []).map((tc, pos) => {
      const id = tc.id?.trim() ? tc.id : `deerflow_synthetic_tool_call_${msgIdx}_tc_${pos}`;
      const name = tc.name?.trim() ? tc.name : "unknown_tool";
      const args = tc.args && typeof tc.args === "object" && !Array.isArray(tc.args) ? tc.args : {};
      if (id !== tc.id || name !== tc.name || args !== tc.args) rewritten = true;
      return { ...tc, id, name, args };
    });
    const invalid = (m.invalid_tool_calls ?? []).map((tc, pos) => ({
      id: tc.id?.trim() ? tc.id : `deerflow_synthetic_tool_call_${msgIdx}_invalid_${pos}`,
      name: tc.name?.trim() ? tc.name : "unknown_tool",
      invalid: parserError(tc.error, tc.args),
    }));
    if (rewritten) {
      out.push(new AIMessage({ content: m.content, id: m.id, name: m.name, tool_calls: valid, invalid_tool_calls: m.invalid_tool_calls,
        additional_kwargs: m.additional_kwargs, response_metadata: m.response_metadata, usage_metadata: m.usage_metadata }));
      changed = true;
    } else out.push(m);
    const calls: Call[] = [...valid.map((c) => ({ id: c.id, name: c.name })), ...invalid];
    for (const call of calls) {
      const result = results.get(call.id);
      if (result && !used.has(result)) {
        used.add(result);
        out.push(result);
        continue;
      }
      placeholders++;
      changed = true;
      const content = call.invalid !== undefined
        ? invalidCallResult(call.name, call.invalid)
        : call.name === "unknown_tool"
          ? "Error: this tool call had an empty tool name and was not executed. Call a tool by its exact name."
          : `Error: the tool call '${call.name}' was interrupted before it returned a result. Retry it if it is still needed.`;
      out.push(new ToolMessage({ content, tool_call_id: call.id, name: call.name, status: "error" }));
    }
  });
  const orphans = [...results.values()].filter((r) => !used.has(r)).length
    + messages.filter((m) => ToolMessage.isInstance(m) && !m.tool_call_id).length;
  // Regrouping moves results without adding or removing any: compare positions too.
  if (!changed && orphans === 0 && out.length === messages.length && out.every((m, i) => m === messages[i])) {
    return { messages, orphans: 0, placeholders: 0 };
  }
  return { messages: out, orphans, placeholders };
}

/** Applies {@link repairToolCallHistory} to every model request (hook: wrapModelCall) and logs what it repaired. */
export class DanglingToolCallMiddleware extends DeerflowMiddleware {
  readonly name = "DanglingToolCallMiddleware";

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const repaired = repairToolCallHistory(request.messages);
    if (repaired.messages === request.messages) return handler(request) as never;
    getLogger().warn({ orphans: repaired.orphans, placeholders: repaired.placeholders }, "repaired dangling tool calls in the model request");
    return handler({ ...request, messages: repaired.messages }) as never;
  }
}
