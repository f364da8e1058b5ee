// Port of DeerFlow agents/middlewares/title_middleware.py (TitleMiddleware).
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, StateSchema } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { ThreadStateFields } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";
import { parseOnce } from "../parse-once.js";
import { textOf, userTypedText } from "./message-utils.js";
import { TitleConfigSchema, type TitleConfig } from "./title-options.js";
import { recordMiddlewareEvent } from "../run-journal-sink.js";

export { TitleConfigSchema, type TitleConfig };

/** Default prompt of the LLM path; `{max_words}`, `{user_msg}`, `{assistant_msg}` are filled in. */
export const DEFAULT_TITLE_PROMPT =
  "Generate a concise title (max {max_words} words) for this conversation.\nUser: {user_msg}\nAssistant: {assistant_msg}\n\n" +
  "Return only the title, without quotes or explanation.";

/** Options of {@link TitleMiddleware}: the `title` section plus an optional model for LLM titles. */
export interface TitleMiddlewareOptions extends Partial<TitleConfig> {
  /** Model that writes titles. Without one the title is the first user message, shortened (the fallback). */
  model?: BaseChatModel;
  /** The `title` section as one object (e.g. `appConfig.title`), parsed once per object; the other keys override it. */
  section?: Partial<TitleConfig>;
}

/** True for a human message the user wrote (not a hidden reminder, summary or injected context). */
export function isRealUserMessage(m: BaseMessage): boolean {
  if (!HumanMessage.isInstance(m)) return false;
  const kw = m.additional_kwargs ?? {};
  return !kw.hide_from_ui && !kw.dynamic_context_reminder && m.name !== "summary";
}

/**
 * Title from the first user message: the text itself when it fits in `min(maxChars, 50)`, else its first
 * `min(50, maxChars - 3)` characters (code points), right-trimmed, plus "..."; "New Conversation" when empty. Mirrors DeerFlow
 * `_fallback_title`.
 */
export function fallbackTitle(userText: string, maxChars = 60): string {
  const text = userText.replace(/\s+/g, " ").trim();
  if (!text) return "New Conversation";
  // Counted in code points, as Python's len(): a cut never splits a surrogate pair (an emoji, a rare CJK character).
  const chars = Array.from(text);
  if (chars.length <= Math.min(maxChars, 50)) return text;
  return `${chars.slice(0, Math.min(50, maxChars - 3)).join("").trimEnd()}...`;
}

/** Gate of DeerFlow `_should_generate_title`: >= 2 messages, exactly one real user message, >= 1 AI message. */
export function shouldGenerateTitle(messages: readonly BaseMessage[]): boolean {
  return messages.length >= 2 && messages.filter(isRealUserMessage).length === 1 && messages.some((m) => AIMessage.isInstance(m));
}

const stripThink = (s: string) => s.replace(/<think>[\s\S]*?(<\/think>|$)/gi, "");

/** State keys of TitleMiddleware (one instance for every build: zod compiles a parser per instance). */
const TitleStateSchema = new StateSchema({ title: ThreadStateFields.title });

/**
 * Names the thread after its first exchange: when `enabled`, the state has no `title`, and the conversation
 * (with the new model response) has exactly one real user message and an AI message, writes `{title}`. With a
 * `model`, the title comes from it (prompt with `max_words`, user/assistant text cut to 500 chars, `<think>`
 * blocks and quotes stripped, cut to `max_chars`); a model failure or an empty answer falls back to the user's
 * first message, shortened ({@link fallbackTitle}). The title call is tagged `nostream`, so its tokens do not show
 * in the `messages` stream.
 * Hook: wrapModelCall, which returns a Command carrying `title` next to the model's message (DeerFlow uses
 * after_model); no graph node is added.
 */
export class TitleMiddleware extends DeerflowMiddleware {
  readonly name = "TitleMiddleware";
  readonly stateSchema = TitleStateSchema;
  readonly config: TitleConfig;
  private readonly model?: BaseChatModel;

  /** @throws ZodError for limits out of range (max_words 1-20, max_chars 10-200). */
  constructor(options: TitleMiddlewareOptions = {}) {
    super();
    const { model, section, ...config } = options;
    // The build passes the app config's section object: parsed once per object, not per build.
    this.config = Object.keys(config).length ? TitleConfigSchema.parse({ ...section, ...config }) : parseOnce(TitleConfigSchema, section ?? {});
    this.model = model;
  }

  /** The title for a conversation (LLM when a model is set, else or on failure the fallback). */
  async generateTitle(messages: readonly BaseMessage[]): Promise<string> {
    const user = messages.find(isRealUserMessage);
    // Titles come from what the user typed, never from blocks the server injected (uploads, context).
    const userText = user ? userTypedText(user) : "";
    const fallback = fallbackTitle(userText, this.config.max_chars);
    // An attachment-only message has nothing to title: the default title, without a model call.
    if (!this.model || !userText.trim()) return fallback;
    const assistant = [...messages].reverse().find((m) => AIMessage.isInstance(m));
    const prompt = (this.config.prompt_template ?? DEFAULT_TITLE_PROMPT)
      .replaceAll("{max_words}", String(this.config.max_words))
      .replaceAll("{user_msg}", stripThink(userText).slice(0, 500))
      .replaceAll("{assistant_msg}", stripThink(assistant ? textOf(assistant) : "").slice(0, 500));
    try {
      const out = await this.model.invoke(prompt, { tags: ["nostream", "middleware:title"] });
      const title = stripThink(textOf(out)).trim().replace(/^["'“”‘’`]+|["'“”‘’`]+$/g, "").trim().slice(0, this.config.max_chars).trim();
      return title || fallback;
    } catch (err) {
      getLogger().warn({ err: (err as Error).message }, "title generation failed; using the fallback title");
      return fallback;
    }
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    const state = request.state as { messages?: BaseMessage[]; title?: string | null } | undefined;
    if (!this.config.enabled || state?.title || !AIMessage.isInstance(response)) return response as never;
    const conversation = [...(state?.messages ?? request.messages), response];
    if (!shouldGenerateTitle(conversation)) return response as never;
    const title = await this.generateTitle(conversation);
    recordMiddlewareEvent(request.runtime, "title", { name: "TitleMiddleware", hook: "wrap_model_call", action: "generate_title", changes: { title } });
    return new Command({ update: { title } }) as never;
  }
}
