// Port of DeerFlow agents/middlewares/input_sanitization_middleware.py (InputSanitizationMiddleware) and
// tool_result_sanitization_middleware.py (ToolResultSanitizationMiddleware): text imitating the gateway's own
// blocks loses its structure before the model reads it.
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest, ToolCallHandler } from "langchain";
import { DeerflowMiddleware } from "./base.js";
import { mapToolMessage } from "./tool-result-meta.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/**
 * Tag names the gateway (system prompt, reminders, uploads, memory, skills, subagents, tool search) injects as
 * trusted context, plus common injection tags: upstream's `_BLOCKED_TAG_NAMES`, with the gateway's `skill`,
 * `user_request` and `conversation` blocks.
 */
export const BLOCKED_TAG_NAMES: readonly string[] = [
  "system-reminder", "system_reminder", "memory", "current_date", "think", "analysis", "role", "soul", "self_update",
  "thinking_style", "clarification_system", "critical_reminders", "response_style", "citations", "uploaded_files",
  "current_uploads", "subagent_system", "skill_system", "skill_index", "available_skills", "disabled_skills",
  "memory_tool_system", "todo_list_system", "durable_context_data", "slash_skill_activation", "mcp_routing_hints",
  "available-deferred-tools", "goal_continuation", "background_task_event", "file_editing_workflow", "guidelines",
  "output_format", "working_directory", "tool_restrictions", "system", "instruction", "important", "override",
  "ignore", "prompt",
];

// Longest names first, so `system-reminder` is not read as `system` followed by text. Linear: one alternation,
// then `[^<>]*` (no nested quantifiers).
const TAG = new RegExp(`<\\s*/?\\s*(?:${[...BLOCKED_TAG_NAMES].sort((a, b) => b.length - a.length).map((t) => t.replace(/[-]/g, "\\-")).join("|")})(?![\\w-])[^<>]*>?`, "gi");
const BOUNDARY = /--- (BEGIN|END) USER INPUT ---/g;

/**
 * Neutralizes untrusted text (upstream `neutralize_untrusted_tags`): each blocked tag (`<system-reminder>`,
 * `</memory>`, `<current_uploads attr>`...) has `<`/`>` escaped to `&lt;`/`&gt;`, and the plain-text
 * `--- BEGIN/END USER INPUT ---` markers become `[BEGIN/END USER INPUT]`. Other text is returned as is (the same
 * string when nothing matched).
 */
export function neutralizeUntrustedTags(text: string): string {
  if (!text.includes("<") && !text.includes("--- ")) return text;
  return text.replace(TAG, (m) => m.replace(/</g, "&lt;").replace(/>/g, "&gt;")).replace(BOUNDARY, (_m, which: string) => `[${which} USER INPUT]`);
}

/** Content with its text neutralized (string, or the text blocks of a list); the same object when nothing changed. */
function neutralizeContent<C extends BaseMessage["content"]>(content: C): C {
  if (typeof content === "string") return neutralizeUntrustedTags(content) as C;
  let changed = false;
  const blocks = content.map((b) => {
    if (typeof b !== "object" || b === null || b.type !== "text" || typeof (b as { text?: unknown }).text !== "string") return b;
    const text = neutralizeUntrustedTags((b as { text: string }).text);
    if (text === (b as { text: string }).text) return b;
    changed = true;
    return { ...b, text };
  });
  return (changed ? blocks : content) as C;
}

/** A user's own message: not a hidden one the server added (summaries, reminders, activations). */
const isGenuineUserMessage = (m: BaseMessage) => HumanMessage.isInstance(m) && !m.additional_kwargs?.hide_from_ui && m.name !== "summary";

/**
 * The user's text in a human message, neutralized: with `additional_kwargs.original_user_content` (the uploads
 * block was prepended by the server), only that suffix is neutralized, so the trusted `<current_uploads>` block
 * stays intact.
 */
function sanitizeHuman(m: HumanMessage): HumanMessage {
  const original = m.additional_kwargs?.original_user_content;
  let content: HumanMessage["content"];
  if (typeof original === "string" && typeof m.content === "string" && m.content.endsWith(original)) {
    const clean = neutralizeUntrustedTags(original);
    if (clean === original) return m;
    content = m.content.slice(0, m.content.length - original.length) + clean;
  } else if (typeof original === "string" && Array.isArray(m.content) && m.content.length >= 2) {
    const rest = neutralizeContent(m.content.slice(1));
    if (rest.every((b, i) => b === m.content[i + 1])) return m;
    content = [m.content[0], ...rest] as HumanMessage["content"];
  } else {
    content = neutralizeContent(m.content);
    if (content === m.content) return m;
  }
  return new HumanMessage({ content, id: m.id, name: m.name, additional_kwargs: m.additional_kwargs, response_metadata: m.response_metadata });
}

/**
 * Neutralizes gateway-imitating tags in the user's own messages on their way to the model (not in state: the
 * thread keeps what the user typed). Server-added hidden messages and the uploads block are left alone. Unlike
 * upstream, the text is not wrapped in `--- BEGIN/END USER INPUT ---` markers (our prompts do not speak of them).
 * Hook: wrapModelCall, outermost, so every inner middleware sees the sanitized request.
 */
export class InputSanitizationMiddleware extends DeerflowMiddleware {
  readonly name = "InputSanitizationMiddleware";

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    let messages: BaseMessage[] | null = null;
    for (let i = 0; i < request.messages.length; i++) {
      const m = request.messages[i];
      if (!isGenuineUserMessage(m)) continue;
      const clean = sanitizeHuman(m as HumanMessage);
      if (clean === m) continue;
      messages ??= [...request.messages];
      messages[i] = clean;
    }
    return handler(messages ? { ...request, messages } : request) as never;
  }
}

/** Tools whose results are remote, attacker-influenceable content (upstream `_REMOTE_CONTENT_TOOL_NAMES`). */
export const REMOTE_CONTENT_TOOLS: ReadonlySet<string> = new Set(["web_fetch", "web_search", "image_search", "web_capture"]);

/**
 * Neutralizes gateway-imitating tags in the results of the remote-content tools (`web_fetch`, `web_search`,
 * `image_search`, `web_capture`), plus any tool named at construction, as upstream (name-based, so an MCP
 * fetch tool under another name is not covered, as upstream notes). Local tools (bash, file reads) are left alone so code and logs are not mangled.
 * Hook: wrapToolCall, inner of ToolOutputBudget so the saved file and the synopsis are both neutralized.
 */
export class ToolResultSanitizationMiddleware extends DeerflowMiddleware {
  readonly name = "ToolResultSanitizationMiddleware";

  constructor(private readonly extraTools: ReadonlySet<string> = new Set()) {
    super();
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const name = request.toolCall.name;
    if (!REMOTE_CONTENT_TOOLS.has(name) && !this.extraTools.has(name)) return handler(request);
    return mapToolMessage(await handler(request), (result) => {
      const content = neutralizeContent(result.content);
      if (content === result.content) return result;
      return new ToolMessage({ content, tool_call_id: result.tool_call_id, id: result.id, name: result.name, status: result.status, artifact: result.artifact, additional_kwargs: result.additional_kwargs });
    });
  }
}
