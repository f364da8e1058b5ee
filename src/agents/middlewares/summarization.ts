// Port of DeerFlow agents/middlewares/summarization_middleware.py (SummarizationMiddleware). langchain's
// summarizationMiddleware does not fit: it writes the summary into `messages` (DeerFlow keeps it in `summary_text`)
// and replaces the history with an "Error generating summary" text when the model fails; its token counter is reused.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { getBufferString, HumanMessage, RemoveMessage, ToolMessage, trimMessages, type BaseMessage } from "@langchain/core/messages";
import { Command, REMOVE_ALL_MESSAGES, StateSchema } from "@langchain/langgraph";
import { countTokensApproximately, type ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { ThreadStateFields } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";
import { textOf } from "./message-utils.js";
import { isRealUserMessage } from "./title.js";
import { SummarizationConfigSchema, type ContextSize, type SummarizationConfig } from "./summarization-options.js";

export { SummarizationConfigSchema, type ContextSize };
import { parseOnce } from "../parse-once.js";

/** Default instructions; the existing summary and the new messages follow in tagged blocks. */
export const DEFAULT_SUMMARY_PROMPT =
  "Condense the conversation below into a summary that lets the assistant continue the work: the user's goals and " +
  "preferences, decisions made, facts learned, files and tools used, and what remains to be done. Merge it with the " +
  "existing summary, if any. Reply with the summary only.";

/** Options of {@link SummarizationMiddleware}. */
export interface SummarizationOptions {
  /** Model that writes summaries. */
  model: BaseChatModel;
  /** When to compact (conditions are OR-ed); null or absent: never. */
  trigger?: ContextSize | ContextSize[] | null;
  /** What to keep verbatim; default the last 20 messages. */
  keep?: ContextSize;
  /** Token budget of the text sent for summarizing (newest messages win). Default 4000. */
  trimTokensToSummarize?: number | null;
  summaryPrompt?: string | null;
  /** Token counter; default langchain's `countTokensApproximately`. */
  tokenCounter?: (messages: BaseMessage[]) => number;
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** The hidden message that carries `summary_text` to the model. */
export function summaryMessage(summary: string): HumanMessage {
  return new HumanMessage({ name: "summary", content: `Here is a summary of the conversation to date:\n\n${summary}`, additional_kwargs: { hide_from_ui: true } });
}

/** State keys of SummarizationMiddleware (one instance for every build: zod compiles a parser per instance). */
const SummarizationStateSchema = new StateSchema({ summary_text: ThreadStateFields.summary_text });

/**
 * Compacts long conversations. Before each model call the persisted history (plus the previous `summary_text`,
 * which counts toward token triggers) is checked against `trigger`; when met, the history is cut so that `keep`
 * survives (never between an AI message and its tool results), dynamic-context reminders and the latest real user
 * message are rescued from the cut part, and the rest is summarized together with the previous summary
 * (`<existing_summary>` / `<new_messages>`, HTML-escaped). The call then goes to the model with the summary and the
 * kept messages, and the state becomes `{messages: kept + response, summary_text}`. A failed or blank summary
 * changes nothing: history is never lost. On every call an existing `summary_text` reaches the model as a hidden
 * human message named `summary` (DeerFlow injects it from DurableContextMiddleware, which is not ported).
 * Hook: wrapModelCall (DeerFlow: before_model); the rewrite is a Command next to the model's message.
 * The SDK never builds this itself (`summarization: true` is rejected); pass an instance.
 */
export class SummarizationMiddleware extends DeerflowMiddleware {
  readonly name = "SummarizationMiddleware";
  readonly stateSchema = SummarizationStateSchema;
  private readonly model: BaseChatModel;
  private readonly triggers: ContextSize[];
  private readonly keep: ContextSize;
  private readonly trimTokens: number | null;
  private readonly prompt: string;
  private readonly count: (messages: BaseMessage[]) => number;

  constructor(options: SummarizationOptions) {
    super();
    this.model = options.model;
    this.triggers = options.trigger ? (Array.isArray(options.trigger) ? options.trigger : [options.trigger]) : [];
    this.keep = options.keep ?? { type: "messages", value: 20 };
    this.trimTokens = options.trimTokensToSummarize === undefined ? 4000 : options.trimTokensToSummarize;
    this.prompt = options.summaryPrompt ?? DEFAULT_SUMMARY_PROMPT;
    this.count = options.tokenCounter ?? ((m) => countTokensApproximately(m));
  }

  private maxInputTokens(): number | undefined {
    return (this.model as { profile?: { maxInputTokens?: number } }).profile?.maxInputTokens;
  }

  /** True when one of the triggers is met by `messages` plus the previous summary. */
  shouldSummarize(messages: BaseMessage[], summary: string | null): boolean {
    const tokens = () => this.count(messages) + (summary ? this.count([summaryMessage(summary)]) : 0);
    return this.triggers.some((t) => {
      if (t.type === "messages") return messages.length >= t.value;
      if (t.type === "tokens") return tokens() >= t.value;
      const max = this.maxInputTokens();
      return max !== undefined && tokens() >= Math.floor(max * t.value);
    });
  }

  /** Index of the first message kept verbatim (0: nothing to summarize). */
  cutoff(messages: BaseMessage[]): number {
    let cut: number;
    if (this.keep.type === "messages") cut = Math.max(0, messages.length - this.keep.value);
    else {
      const budget = this.keep.type === "tokens" ? this.keep.value : Math.floor((this.maxInputTokens() ?? 0) * this.keep.value);
      cut = messages.length;
      while (cut > 0 && this.count(messages.slice(cut - 1)) <= budget) cut--;
    }
    while (cut > 0 && cut < messages.length && ToolMessage.isInstance(messages[cut])) cut--;
    return cut;
  }

  /** The new summary text, or null when the model fails or answers blank. */
  async summarize(previous: string | null, messages: BaseMessage[]): Promise<string | null> {
    let trimmed = messages;
    if (this.trimTokens) {
      try {
        trimmed = await trimMessages(messages, { maxTokens: this.trimTokens, tokenCounter: (m) => this.count(m), strategy: "last", allowPartial: true });
      } catch {
        trimmed = messages.slice(-15);
      }
    }
    const prompt = `${this.prompt}\n\n<existing_summary>\n${escapeXml(previous ?? "")}\n</existing_summary>\n\n<new_messages>\n${escapeXml(getBufferString(trimmed))}\n</new_messages>`;
    try {
      const text = textOf(await this.model.invoke(prompt, { tags: ["nostream", "middleware:summarization"] })).trim();
      return text || null;
    } catch (err) {
      getLogger().warn({ err: (err as Error).message }, "summarization failed; history kept as is");
      return null;
    }
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const state = request.state as { messages?: BaseMessage[]; summary_text?: string | null } | undefined;
    const history = state?.messages ?? request.messages;
    const previous = state?.summary_text || null;
    if (this.triggers.length && this.shouldSummarize(history, previous)) {
      const cut = this.cutoff(history);
      if (cut > 0) {
        const head = history.slice(0, cut);
        // The newest real user message anchors the turn: if the cut would summarize it away, keep it verbatim.
        const latestUser = [...history].reverse().find(isRealUserMessage);
        const rescued = head.filter((m) => m === latestUser || m.additional_kwargs?.dynamic_context_reminder);
        const summarized = head.filter((m) => !rescued.includes(m));
        const summary = summarized.length ? await this.summarize(previous, summarized) : null;
        if (summary) {
          const goneIds = new Set(summarized.map((m) => m.id).filter(Boolean));
          const gone = (m: BaseMessage) => summarized.includes(m) || (m.id !== undefined && goneIds.has(m.id));
          const kept = [...rescued, ...history.slice(cut)];
          const response = await handler({ ...request, messages: [summaryMessage(summary), ...request.messages.filter((m) => !gone(m))] });
          return new Command({ update: { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...kept, response as BaseMessage], summary_text: summary } }) as never;
        }
      }
    }
    return (previous ? handler({ ...request, messages: [summaryMessage(previous), ...request.messages] }) : handler(request)) as never;
  }
}

/**
 * The app layer's SummarizationMiddleware from the `summarization` section: null when `enabled` is false or no
 * model is given (DeerFlow logs a warning and skips it then). `model_name` resolution is the caller's job.
 */
export function createSummarizationMiddleware(config: Partial<SummarizationConfig>, model: BaseChatModel | null | undefined): SummarizationMiddleware | null {
  const c = parseOnce(SummarizationConfigSchema, config);
  if (!c.enabled) return null;
  if (!model) {
    getLogger().warn("summarization is enabled but no summary model could be built; skipping it");
    return null;
  }
  return new SummarizationMiddleware({ model, trigger: c.trigger ?? null, keep: c.keep, trimTokensToSummarize: c.trim_tokens_to_summarize, summaryPrompt: c.summary_prompt });
}
