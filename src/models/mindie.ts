// Port of DeerFlow models/mindie_provider.py: Huawei MindIE serves OpenAI-compatible chat completions, but its
// chat templates cannot read OpenAI tool-call messages, its models answer tool calls as XML text, it drops the
// choices of a streamed reply when tools are bound, and gateways over-escape newlines. This adapter converts both
// ways and fakes streaming (one whole reply, sent in pieces) when tools are bound.
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import { ChatOpenAI, type ChatOpenAIFields } from "@langchain/openai";

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const unescapeXml = (text: string) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#x27;|&#39;/g, "'").replace(/&amp;/g, "&");

function textOf(content: BaseMessage["content"]): string {
  if (typeof content === "string") return content;
  return content.map((b) => (typeof b === "string" ? b : b.type === "text" && typeof b.text === "string" ? b.text : "")).join("");
}

/**
 * Messages MindIE's templates can read: list contents flattened to text, an assistant's tool calls written as
 * `<tool_call> <function=name> <parameter=k>v</parameter> </function> </tool_call>`, tool results as a user turn
 * inside `<tool_response>` (escaped, so a result cannot close the frame early), and no empty content.
 */
export function toMindIEMessages(messages: BaseMessage[]): BaseMessage[] {
  return messages.map((message) => {
    const text = textOf(message.content);
    if (AIMessage.isInstance(message) && message.tool_calls?.length) {
      const calls = message.tool_calls.map((call) => {
        const params = Object.entries(call.args ?? {}).map(([k, v]) => `<parameter=${escapeXml(k)}>${escapeXml(typeof v === "string" ? v : JSON.stringify(v))}</parameter>`);
        return `<tool_call> <function=${escapeXml(call.name)}> ${params.join(" ")} </function> </tool_call>`;
      });
      return new AIMessage({ content: [text, ...calls].filter(Boolean).join("\n").trim() || " " });
    }
    if (ToolMessage.isInstance(message)) return new HumanMessage({ content: `<tool_response>\n${escapeXml(text)}\n</tool_response>` });
    if (typeof message.content === "string" && text.trim()) return message;
    const copy = Object.create(Object.getPrototypeOf(message)) as BaseMessage;
    Object.assign(copy, message, { content: text.trim() ? text : " " });
    return copy;
  });
}

/** A parameter value as the model meant it: JSON for objects, arrays, booleans, null and integers, else the text. */
function parseValue(raw: string): unknown {
  if (/^[[{]/.test(raw) || ["true", "false", "null"].includes(raw) || /^\d+$/.test(raw)) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}

/** Top-level `<tool_call>...</tool_call>` blocks (nesting tolerated): [start, end, inner]. */
function toolCallBlocks(content: string): [number, number, string][] {
  const blocks: [number, number, string][] = [];
  let depth = 0;
  let start = -1;
  for (const m of content.matchAll(/<\/?tool_call>/g)) {
    if (m[0] === "<tool_call>") {
      if (depth++ === 0) start = m.index;
    } else if (depth > 0 && --depth === 0) {
      blocks.push([start, m.index + m[0].length, content.slice(start + "<tool_call>".length, m.index)]);
    }
  }
  return blocks;
}

/** Splits XML tool calls out of a reply: the remaining text, and the calls with ids. */
export function parseMindIEToolCalls(content: string): { text: string; calls: { name: string; args: Record<string, unknown>; id: string; type: "tool_call" }[] } {
  if (!content.includes("<tool_call>")) return { text: content, calls: [] };
  const calls: { name: string; args: Record<string, unknown>; id: string; type: "tool_call" }[] = [];
  let text = "";
  let cursor = 0;
  for (const [start, end, inner] of toolCallBlocks(content)) {
    text += content.slice(cursor, start);
    cursor = end;
    const fn = /<function=([^>]+)>/.exec(inner);
    if (!fn) continue;
    // Parameters of nested calls belong to those calls, not this one.
    let own = "";
    let at = 0;
    for (const [s, e] of toolCallBlocks(inner)) [own, at] = [own + inner.slice(at, s), e];
    own += inner.slice(at);
    const args: Record<string, unknown> = {};
    for (const p of own.matchAll(/<parameter=([^>]+)>([\s\S]*?)<\/parameter>/g)) args[unescapeXml(p[1].trim())] = parseValue(unescapeXml(p[2].trim()));
    calls.push({ name: unescapeXml(fn[1].trim()), args, id: `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`, type: "tool_call" });
  }
  return { text: (text + content.slice(cursor)).trim(), calls };
}

/** Literal `\n` sequences decoded as newlines, except inside fenced code blocks. */
export function decodeEscapedNewlines(content: string): string {
  if (!content.includes("\\n")) return content;
  return content.split(/(```[\s\S]*?```)/).map((part) => (part.startsWith("```") ? part : part.replace(/\\n/g, "\n"))).join("");
}

/** Upstream `MindIEChatModel`: see the file header. Timeouts default to 900 s (long tool-call generations). */
export class MindIEChatModel extends ChatOpenAI {
  constructor(fields?: ChatOpenAIFields) {
    super({ timeout: 900_000, ...fields });
  }

  static override lc_name() {
    return "MindIEChatModel";
  }

  // ChatOpenAI.withConfig (bindTools) builds a plain ChatOpenAI; keep this class.
  override withConfig(config: Partial<this["ParsedCallOptions"]>): this {
    const model = new MindIEChatModel(this.fields) as this;
    (model as unknown as { defaultOptions: unknown }).defaultOptions = { ...this.defaultOptions, ...config };
    return model;
  }

  // Events are built from this class's chunks (see openai-compatible.ts), so the XML and newline fixes apply.
  override _streamChatModelEvents(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun) {
    return BaseChatModel.prototype._streamChatModelEvents.call(this, messages, options, runManager);
  }

  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    const result = await super._generate(toMindIEMessages(messages), options, runManager);
    for (const generation of result.generations) {
      const message = generation.message as AIMessage;
      if (typeof message.content !== "string") continue;
      const { text, calls } = parseMindIEToolCalls(decodeEscapedNewlines(message.content));
      message.content = text;
      generation.text = text;
      if (calls.length) message.tool_calls = [...(message.tool_calls ?? []), ...calls];
    }
    return result;
  }

  override async *_streamResponseChunks(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    if (!options.tools?.length) {
      for await (const chunk of super._streamResponseChunks(toMindIEMessages(messages), options, runManager)) {
        if (typeof chunk.message.content === "string") chunk.message.content = decodeEscapedNewlines(chunk.message.content);
        yield chunk;
      }
      return;
    }
    // MindIE drops a streamed reply's choices when tools are bound: generate it whole, then send it in pieces.
    const result = await this._generate(messages, options, runManager);
    for (const generation of result.generations) {
      const message = generation.message as AIMessage;
      const text = typeof message.content === "string" ? message.content : "";
      for (let i = 0; i < text.length; i += 15) {
        const chunk = new ChatGenerationChunk({ text: text.slice(i, i + 15), message: new AIMessageChunk({ content: text.slice(i, i + 15), id: message.id }) });
        yield chunk;
        await runManager?.handleLLMNewToken(chunk.text, { prompt: 0, completion: 0 }, undefined, undefined, undefined, { chunk });
      }
      const tool_call_chunks = (message.tool_calls ?? []).map((c, index) => ({ name: c.name, args: JSON.stringify(c.args), id: c.id, index, type: "tool_call_chunk" as const }));
      yield new ChatGenerationChunk({ text: "", message: new AIMessageChunk({ content: "", id: message.id, tool_call_chunks, usage_metadata: message.usage_metadata }), generationInfo: generation.generationInfo });
    }
  }
}
