// The embedded offline chat model: no counterpart upstream (DeerFlow always needs a real provider).
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel, type BaseChatModelParams } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { userTypedText } from "../agents/middlewares/message-utils.js";
import { scriptedMemoryUpdate } from "../agents/memory/scripted-extraction.js";
import { scriptedGoalVerdict } from "./scripted-goal-verdict.js";

/**
 * Constructor options of {@link ScriptedChatModel}. The model reads them from a `config.yaml` model entry
 * (`model`, `token_delay_ms`), camelCased by the model factory.
 */
export interface ScriptedChatModelInput extends BaseChatModelParams {
  /** Model id reported in response metadata (the entry's `model:`). Default `"scripted"`. */
  model?: string;
  /** Pause between streamed tokens, in ms. Default 0; the shipped config uses 30 so `curl -N` shows streaming. */
  tokenDelayMs?: number;
}

type ScriptedTurn =
  | { kind: "text"; text: string }
  | { kind: "tool"; name: string; args: Record<string, unknown>; id: string }
  | { kind: "fail"; message: string };

/** Matches `!call <tool_name> [json object]` on the last human message. */
const CALL_RE = /^\s*!call\s+([A-Za-z0-9_.-]+)\s*([\s\S]*)$/;
/** Matches `!fail <message>`: the model call throws, so error paths can be shown offline. */
const FAIL_RE = /^\s*!fail\b\s*([\s\S]*)$/;

/** Text of a message's content (string content, or the `text` blocks of list content). */
function textOf(message: BaseMessage): string {
  const c = message.content;
  if (typeof c === "string") return c;
  return c
    .map((block) => (typeof block === "string" ? block : block.type === "text" ? String((block as { text?: unknown }).text ?? "") : ""))
    .join("");
}

/**
 * The skill a slash activation put just before the last human message (SkillActivationMiddleware's hidden
 * `<slash_skill_activation>` message): its name and the first heading of its SKILL.md body, or null.
 */
function slashActivation(messages: BaseMessage[], lastHuman: BaseMessage): { name: string; title: string | null } | null {
  const at = messages.indexOf(lastHuman);
  const before = at > 0 ? messages[at - 1] : undefined;
  if (!before?.additional_kwargs?.slash_skill_activation) return null;
  const text = textOf(before);
  const name = /<skill name="([^"]*)"/.exec(text)?.[1];
  if (!name) return null;
  const title = /^#\s+(.+)$/m.exec(text.split("<skill_content")[1] ?? "")?.[1]?.trim() ?? null;
  return { name, title };
}

/** Whether a UTF-16 code unit is whitespace as the regex class `\s` defines it (ECMAScript WhiteSpace and LineTerminator). */
function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/**
 * The number of whitespace-separated words in `text` (what `text.match(/\S+/g).length` gives), counted without
 * building the array of words: the usage of every model call counts the whole history, system prompt included.
 */
export function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** Splits text into streamed tokens: each word keeps its trailing whitespace, so the deltas join back exactly. */
export function scriptedTokens(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/**
 * An offline, deterministic chat model that streams token by token. It decides its turn from the message
 * history alone (safe with an agent rebuilt per request):
 *
 * - last message from a tool: `Tool <name> returned: <content>`;
 * - last human message `!call <tool> {json args}`: a tool call to `<tool>` when that tool is bound
 *   (otherwise a text reply listing the bound tools); e.g. `!call ask_clarification {"question":"Which city?"}`;
 * - last human message `!fail <message>`: the model call throws `Error(<message>)`;
 * - a slash-activated skill (`/<skill> <request>`, see SkillActivationMiddleware): `Following the <skill> skill
 *   (<its first heading>): <request>`, so the activation can be seen offline;
 * - a memory-extraction request (the default memory backend's prompt): the JSON update of the fixed rule in
 *   {@link scriptedMemoryUpdate} (first-person sentences of the user become facts);
 * - a goal evaluation (the goal evaluator's prompt): the verdict of {@link scriptedGoalVerdict} (`GOAL MET` in the
 *   conversation is satisfied, `GOAL BLOCKED` needs the user, anything else is not met yet);
 * - anything else: `You said: <text>` (the last human text, echoed).
 *
 * Latency: `tokenDelayMs` per token, streamed or not.
 * Ids: tool calls get `call_<n>` where n counts the AI messages so far, so reruns are reproducible.
 * Usage metadata counts whitespace-separated words as tokens.
 */
export class ScriptedChatModel extends BaseChatModel {
  /** Model id echoed in `response_metadata.model_name`. */
  model: string;
  /** Delay between streamed tokens, in ms. */
  tokenDelayMs: number;
  /** Tools bound with {@link bindTools}; a tool call is only emitted for one of these names. */
  boundTools: StructuredToolInterface[] = [];

  constructor(fields: ScriptedChatModelInput = {}) {
    super(fields);
    this.model = fields.model ?? "scripted";
    this.tokenDelayMs = Math.max(0, Number(fields.tokenDelayMs ?? 0));
  }

  static override lc_name(): string {
    return "ScriptedChatModel";
  }

  override _llmType(): string {
    return "scripted";
  }

  /** Returns a copy of this model that may call `tools` (names are all it needs). */
  override bindTools(tools: unknown[]): ScriptedChatModel {
    const bound = new ScriptedChatModel({ model: this.model, tokenDelayMs: this.tokenDelayMs, callbacks: this.callbacks });
    bound.boundTools = tools as StructuredToolInterface[];
    return bound;
  }

  /** The deterministic turn for a message history. */
  private turnFor(messages: BaseMessage[]): ScriptedTurn {
    const last = messages.at(-1);
    const aiCount = messages.filter((m) => m.getType() === "ai").length;
    if (!last) return { kind: "text", text: "You said nothing." };
    const memoryUpdate = scriptedMemoryUpdate(messages);
    if (memoryUpdate !== null) return { kind: "text", text: memoryUpdate };
    const goalVerdict = scriptedGoalVerdict(messages);
    if (goalVerdict !== null) return { kind: "text", text: goalVerdict };
    if (last.getType() === "tool") {
      return { kind: "text", text: `Tool ${last.name ?? "tool"} returned: ${textOf(last)}` };
    }
    const lastHuman = [...messages].reverse().find((m) => m.getType() === "human");
    // What the user typed: `!call` / `!fail` still work when UploadsMiddleware put an uploads block before them.
    const text = lastHuman ? userTypedText(lastHuman).trim() : "";
    if (last.getType() === "human") {
      const fail = FAIL_RE.exec(text);
      if (fail) return { kind: "fail", message: fail[1].trim() || "scripted failure" };
      const call = CALL_RE.exec(text);
      if (call) {
        const [, name, rawArgs] = call;
        const names = this.boundTools.map((t) => t.name);
        if (!names.includes(name)) {
          return { kind: "text", text: `Tool '${name}' is not available. Bound tools: ${names.join(", ") || "(none)"}.` };
        }
        let args: Record<string, unknown> = {};
        if (rawArgs.trim()) {
          try {
            const parsed = JSON.parse(rawArgs);
            if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) args = parsed;
            else return { kind: "text", text: `The arguments for '${name}' must be a JSON object.` };
          } catch {
            return { kind: "text", text: `The arguments for '${name}' are not valid JSON.` };
          }
        }
        return { kind: "tool", name, args, id: `call_${aiCount + 1}` };
      }
    }
    const skill = last.getType() === "human" && lastHuman ? slashActivation(messages, lastHuman) : null;
    if (skill) {
      const request = text.replace(/^\/\S+\s*/, "") || "(no request given)";
      return { kind: "text", text: `Following the ${skill.name} skill${skill.title ? ` (${skill.title})` : ""}: ${request}` };
    }
    return { kind: "text", text: `You said: ${text}` };
  }

  private usage(messages: BaseMessage[], output: string) {
    const input = messages.reduce((n, m) => n + countWords(textOf(m)), 0);
    const out = Math.max(1, countWords(output));
    return { input_tokens: input, output_tokens: out, total_tokens: input + out };
  }

  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"]): Promise<ChatResult> {
    const turn = this.turnFor(messages);
    if (turn.kind === "fail") throw new Error(turn.message);
    // Same latency as streaming: one delay per token, so non-streamed runs are just as slow.
    if (this.tokenDelayMs > 0 && turn.kind === "text") await sleep(this.tokenDelayMs * scriptedTokens(turn.text).length, options?.signal);
    else await new Promise<void>((resolve) => setImmediate(resolve));
    const meta = { model_name: this.model, finish_reason: turn.kind === "tool" ? "tool_calls" : "stop" };
    const message =
      turn.kind === "tool"
        ? new AIMessage({
            content: "",
            tool_calls: [{ name: turn.name, args: turn.args, id: turn.id, type: "tool_call" }],
            response_metadata: meta,
            usage_metadata: this.usage(messages, JSON.stringify(turn.args)),
          })
        : new AIMessage({ content: turn.text, response_metadata: meta, usage_metadata: this.usage(messages, turn.text) });
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const turn = this.turnFor(messages);
    if (turn.kind === "fail") throw new Error(turn.message);
    if (turn.kind === "tool") {
      const chunk = new ChatGenerationChunk({
        text: "",
        message: new AIMessageChunk({
          content: "",
          tool_call_chunks: [{ name: turn.name, args: JSON.stringify(turn.args), id: turn.id, index: 0, type: "tool_call_chunk" }],
          response_metadata: { model_name: this.model, finish_reason: "tool_calls" },
          usage_metadata: this.usage(messages, JSON.stringify(turn.args)),
        }),
      });
      yield chunk;
      await runManager?.handleLLMNewToken("", undefined, undefined, undefined, undefined, { chunk });
      return;
    }
    const tokens = scriptedTokens(turn.text);
    for (let i = 0; i < tokens.length; i++) {
      // Like a network model, hand the event loop back between tokens even without a delay.
      if (this.tokenDelayMs > 0) await sleep(this.tokenDelayMs, options.signal);
      else await new Promise<void>((resolve) => setImmediate(resolve));
      options.signal?.throwIfAborted();
      const last = i === tokens.length - 1;
      const chunk = new ChatGenerationChunk({
        text: tokens[i],
        message: new AIMessageChunk({
          content: tokens[i],
          ...(last
            ? { response_metadata: { model_name: this.model, finish_reason: "stop" }, usage_metadata: this.usage(messages, turn.text) }
            : {}),
        }),
      });
      yield chunk;
      await runManager?.handleLLMNewToken(tokens[i], undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
