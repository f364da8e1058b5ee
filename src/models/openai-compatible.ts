// Ports of DeerFlow's patched OpenAI-compatible providers (upstream `deerflow/models/patched_*.py`,
// `vllm_provider.py`): `ChatOpenAI` subclasses whose chat-completions client adjusts the request (replaying
// provider fields on earlier assistant messages, thinking switches, message-name quirks) and the response
// (reasoning text in the provider's own field -> `additional_kwargs.reasoning_content`, which the web app shows).
// Addressed from config.yaml by upstream's `use:` paths (model-catalog.ts).
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { BaseMessage, BaseMessageChunk } from "@langchain/core/messages";
import { AIMessage } from "@langchain/core/messages";
import { ChatOpenAI, ChatOpenAICompletions, type ChatOpenAIFields } from "@langchain/openai";
import { MindIEChatModel } from "./mindie.js";

type Json = Record<string, any>;

/** What one provider changes: the outgoing body, and each streamed delta / whole message coming back. */
export interface ProviderAdjustments {
  /** Edits the request body in place; `originals` are the LangChain messages it was built from. */
  request?(payload: Json, originals: BaseMessage[]): void;
  /** Copies provider fields of a streamed `delta` onto its message chunk. */
  delta?(delta: Json, chunk: BaseMessageChunk): void;
  /** Copies provider fields of a non-streamed `message` onto the LangChain message. */
  message?(raw: Json, message: BaseMessage): void;
}

/** Request-option key that carries the call's LangChain messages to `completionWithRetry` (stripped before the SDK). */
const ORIGINALS = Symbol("deerflow.originalMessages");
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function withOriginals<T extends Json>(options: T, messages: BaseMessage[]): T {
  return { ...options, options: { ...(isObject(options.options) ? options.options : {}), [ORIGINALS]: messages } };
}

/** The chat-completions client with a provider's adjustments hooked into its request and conversion steps. */
export class AdjustedCompletions extends ChatOpenAICompletions {
  readonly adjustments: ProviderAdjustments;

  constructor(fields: ChatOpenAIFields | undefined, adjustments: ProviderAdjustments) {
    super(fields);
    this.adjustments = adjustments;
  }

  override _generate(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: any) {
    return super._generate(messages, withOriginals(options, messages), runManager);
  }

  override async *_streamResponseChunks(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: any) {
    yield* super._streamResponseChunks(messages, withOriginals(options, messages), runManager);
  }

  override completionWithRetry(request: any, requestOptions?: any): any {
    const nested = isObject(requestOptions?.options) ? requestOptions.options : undefined;
    // Streaming passes the call options through (nested `options`); `_generate` spreads `options.options` (top level).
    const originals = (nested?.[ORIGINALS] ?? requestOptions?.[ORIGINALS] ?? []) as BaseMessage[];
    let cleaned = requestOptions;
    if (nested && ORIGINALS in nested) {
      const { [ORIGINALS]: _dropped, ...rest } = nested;
      cleaned = { ...requestOptions, options: Object.keys(rest).length ? rest : undefined };
    }
    if (requestOptions && ORIGINALS in requestOptions) {
      const { [ORIGINALS]: _dropped, ...rest } = cleaned;
      cleaned = rest;
    }
    this.adjustments.request?.(request, originals);
    return super.completionWithRetry(request, cleaned);
  }

  protected override _convertCompletionsDeltaToBaseMessageChunk(delta: Json, rawResponse: any, defaultRole?: any) {
    const chunk = super._convertCompletionsDeltaToBaseMessageChunk(delta, rawResponse, defaultRole);
    this.adjustments.delta?.(delta, chunk);
    return chunk;
  }

  protected override _convertCompletionsMessageToBaseMessage(message: any, rawResponse: any) {
    const converted = super._convertCompletionsMessageToBaseMessage(message, rawResponse);
    this.adjustments.message?.(message, converted);
    return converted;
  }
}

// ---- replay of provider fields on earlier assistant messages (upstream assistant_payload_replay.py) ----

const toolCallIds = (calls: unknown): string => (Array.isArray(calls) ? calls.map((c) => (isObject(c) && typeof c.id === "string" ? c.id : "")).filter(Boolean).join("|") : "");
const stable = (value: unknown): string => JSON.stringify(value ?? null);

/**
 * Pairs each assistant payload message with the `AIMessage` it came from and calls `restore` on the pair: by
 * position when both lists have the same length, else by content and tool-call ids, then by order (upstream's rule).
 */
export function restoreAssistantPayloads(payload: Json[], originals: BaseMessage[], restore: (out: Json, from: AIMessage) => void): void {
  if (payload.length === originals.length) {
    payload.forEach((out, i) => out.role === "assistant" && AIMessage.isInstance(originals[i]) && restore(out, originals[i] as AIMessage));
    return;
  }
  const ais = originals.filter((m): m is AIMessage => AIMessage.isInstance(m));
  const used = new Set<number>();
  const sig = (content: unknown, ids: string) => (content === "" || content == null) && !ids ? null : `${stable(content)}#${ids}`;
  payload.filter((m) => m.role === "assistant").forEach((out, ordinal) => {
    const key = sig(out.content, toolCallIds(out.tool_calls));
    const matches = key === null ? [] : ais.map((m, i) => i).filter((i) => !used.has(i) && sig(ais[i].content, toolCallIds(ais[i].tool_calls?.length ? ais[i].tool_calls : ais[i].additional_kwargs.tool_calls)) === key);
    let index = matches.length === 1 ? matches[0] : -1;
    for (let i = ordinal; index < 0 && i < ais.length; i++) if (!used.has(i)) index = i;
    if (index < 0) return;
    used.add(index);
    restore(out, ais[index]);
  });
}

const replayField = (field: string, as = field) => (out: Json, from: AIMessage) => {
  const value = from.additional_kwargs[field];
  if (value !== undefined && value !== null) out[as] = value;
};

/** Restores `reasoning_content` on earlier assistant messages (DeepSeek, MiMo, StepFun thinking mode require it). */
const replayReasoning: ProviderAdjustments["request"] = (payload, originals) => restoreAssistantPayloads(payload.messages ?? [], originals, replayField("reasoning_content"));

/** Sets `reasoning_content` from the first of `fields` present on a provider object (keeps empty strings). */
const captureReasoning = (fields: string[]) => (raw: Json, message: BaseMessage | BaseMessageChunk) => {
  for (const field of fields) {
    if (raw[field] !== undefined && raw[field] !== null) {
      message.additional_kwargs.reasoning_content = raw[field];
      return;
    }
  }
};

/** PatchedChatOpenAI: Gemini's `thought_signature` on tool calls, echoed back verbatim (else HTTP 400). */
const THOUGHT_SIGNATURES: ProviderAdjustments = {
  request(payload, originals) {
    restoreAssistantPayloads(payload.messages ?? [], originals, (out, from) => {
      const raw = Array.isArray(from.additional_kwargs.tool_calls) ? (from.additional_kwargs.tool_calls as Json[]) : [];
      const calls = Array.isArray(out.tool_calls) ? (out.tool_calls as Json[]) : [];
      calls.forEach((call, i) => {
        const source = raw.find((r) => r.id && r.id === call.id) ?? raw[i];
        const signature = source?.thought_signature ?? source?.thoughtSignature;
        if (signature) call.thought_signature = signature;
      });
    });
  },
};

const THINK_TAGS = /<think>\s*([\s\S]*?)\s*<\/think>/g;
const detailsText = (details: unknown, strip: boolean): string | null => {
  if (!Array.isArray(details)) return null;
  const parts = details.map((d) => (isObject(d) && typeof d.text === "string" ? (strip ? d.text.trim() : d.text) : "")).filter((t) => t.trim());
  return parts.length ? parts.join("\n\n") : null;
};

/** PatchedChatMiniMax: `reasoning_split` on, user `name`s dropped (error 2013), `reasoning_details` -> reasoning. */
const MINIMAX: ProviderAdjustments = {
  request(payload) {
    payload.reasoning_split = true;
    for (const m of payload.messages ?? []) if (isObject(m) && m.role === "user") delete m.name;
  },
  delta(delta, chunk) {
    const text = detailsText(delta.reasoning_details, false);
    if (text) chunk.additional_kwargs.reasoning_content = `${(chunk.additional_kwargs.reasoning_content as string | undefined) ?? ""}${text}`;
  },
  message(raw, message) {
    const inline: string[] = [];
    if (typeof message.content === "string") {
      message.content = message.content.replace(THINK_TAGS, (_, r: string) => (r.trim() && inline.push(r.trim()), "")).trim();
    }
    const parts = [detailsText(raw.reasoning_details, true), ...inline].filter((p, i, all): p is string => !!p && all.indexOf(p) === i);
    if (parts.length) message.additional_kwargs.reasoning_content = parts.join("\n\n");
  },
};

/** vLLM's `reasoning` (text, or a list/object of parts) as readable text. */
function reasoningText(reasoning: unknown): string {
  if (typeof reasoning === "string") return reasoning;
  if (Array.isArray(reasoning)) return reasoning.map(reasoningText).join("");
  if (isObject(reasoning)) {
    for (const key of ["text", "content", "reasoning"]) if (reasoning[key] !== undefined && reasoning[key] !== null) return reasoningText(reasoning[key]);
  }
  return reasoning === undefined || reasoning === null ? "" : JSON.stringify(reasoning);
}

const captureVllm = (raw: Json, message: BaseMessage | BaseMessageChunk) => {
  if (raw.reasoning === undefined || raw.reasoning === null) return;
  message.additional_kwargs.reasoning = raw.reasoning;
  const text = reasoningText(raw.reasoning);
  if (text) message.additional_kwargs.reasoning_content = text;
};

/** VllmChatModel: `chat_template_kwargs.thinking` -> `enable_thinking` (Qwen parser), `reasoning` kept and replayed. */
const VLLM: ProviderAdjustments = {
  request(payload, originals) {
    const kwargs = payload.chat_template_kwargs;
    if (isObject(kwargs) && "thinking" in kwargs) {
      const { thinking, ...rest } = kwargs;
      payload.chat_template_kwargs = { enable_thinking: thinking, ...rest };
    }
    restoreAssistantPayloads(payload.messages ?? [], originals, (out, from) => {
      const value = from.additional_kwargs.reasoning ?? from.additional_kwargs.reasoning_content;
      if (value !== undefined && value !== null) out.reasoning = value;
    });
  },
  delta: captureVllm,
  message: captureVllm,
};

/** The adjustments of each upstream provider class. */
export const ADJUSTMENTS = {
  deepseek: { request: replayReasoning } satisfies ProviderAdjustments,
  openai: THOUGHT_SIGNATURES,
  mimo: { request: replayReasoning, delta: captureReasoning(["reasoning_content"]), message: captureReasoning(["reasoning_content"]) } satisfies ProviderAdjustments,
  stepfun: { request: replayReasoning, delta: captureReasoning(["reasoning_content", "reasoning"]), message: captureReasoning(["reasoning_content", "reasoning"]) } satisfies ProviderAdjustments,
  minimax: MINIMAX,
  vllm: VLLM,
};

/** `ChatOpenAI` whose chat-completions client applies `adjustments` (the Responses API path is left as is). */
function adjusted(name: string, adjustments: ProviderAdjustments) {
  const cls = class extends ChatOpenAI {
    constructor(fields?: ChatOpenAIFields) {
      super({ ...fields, completions: new AdjustedCompletions(fields, adjustments) } as ChatOpenAIFields);
    }
    static override lc_name() {
      return name;
    }
    // The content-block event stream of @langchain/openai converts the raw stream itself, past the adjustments:
    // build the events from this model's (adjusted) chunks instead, as langchain does for any chat model.
    override _streamChatModelEvents(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun) {
      return BaseChatModel.prototype._streamChatModelEvents.call(this, messages, options, runManager);
    }
  };
  Object.defineProperty(cls, "name", { value: name });
  return cls;
}

/** Upstream `PatchedChatDeepSeek` (and `langchain_deepseek:ChatDeepSeek`): replays `reasoning_content`. */
export const PatchedChatDeepSeek = adjusted("PatchedChatDeepSeek", ADJUSTMENTS.deepseek);
/** Upstream `PatchedChatOpenAI`: keeps Gemini's tool-call `thought_signature` across turns. */
export const PatchedChatOpenAI = adjusted("PatchedChatOpenAI", ADJUSTMENTS.openai);
/** Upstream `PatchedChatMiMo`: captures and replays `reasoning_content`. */
export const PatchedChatMiMo = adjusted("PatchedChatMiMo", ADJUSTMENTS.mimo);
/** Upstream `PatchedChatStepFun`: `reasoning` or `reasoning_content` captured, replayed as `reasoning_content`. */
export const PatchedChatStepFun = adjusted("PatchedChatStepFun", ADJUSTMENTS.stepfun);
/** Upstream `PatchedChatMiniMax`: reasoning split on, `reasoning_details` and `<think>` tags -> reasoning. */
export const PatchedChatMiniMax = adjusted("PatchedChatMiniMax", ADJUSTMENTS.minimax);
/** Upstream `VllmChatModel`: vLLM's `reasoning` kept and replayed; Qwen's thinking switch normalised. */
export const VllmChatModel = adjusted("VllmChatModel", ADJUSTMENTS.vllm);
export { MindIEChatModel };
