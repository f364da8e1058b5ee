import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { serializeMessage } from "../../src/runtime/wire/serialization.js";

/** The wire form as LangChain's own serializer gives it: `{...toDict().data, type}` without `lc_*` keys. */
function viaToDict(message: BaseMessage): Record<string, unknown> {
  const { type, data } = message.toDict();
  const out: Record<string, unknown> = { type };
  for (const [k, v] of Object.entries(data as unknown as Record<string, unknown>)) if (!k.startsWith("lc_")) out[k] = v;
  out.type = type;
  return out;
}

const chunk = (fields: ConstructorParameters<typeof AIMessageChunk>[0]) => new AIMessageChunk(fields);

describe("serializeMessage", () => {
  const cases: [string, BaseMessage][] = [
    ["a token chunk", chunk({ content: "Hel" })],
    ["a chunk with an id set after construction", (() => {
      const c = chunk({ content: "lo" });
      c.id = "run-1";
      return c;
    })()],
    ["the last chunk with metadata and usage", chunk({ content: "!", id: "a1", response_metadata: { model_name: "m", finish_reason: "stop" }, usage_metadata: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } })],
    ["a tool call chunk", chunk({ content: "", tool_call_chunks: [{ name: "ls", args: '{"path":"/"}', id: "c1", index: 0, type: "tool_call_chunk" }] })],
    ["concatenated chunks", chunk({ content: "a", id: "x" }).concat(chunk({ content: "b", response_metadata: { model_name: "m" } }))],
    ["content blocks", chunk({ content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: "data:x" } }] })],
    ["reasoning in additional_kwargs", chunk({ content: "", additional_kwargs: { reasoning_content: "think", nested: { deep: [1, { ok: true }] } } })],
    ["an additional_kwargs object with an lc key (escaped by LangChain)", chunk({ content: "x", additional_kwargs: { lc: 1, type: "constructor" } })],
    ["a Date in additional_kwargs (not a plain object)", chunk({ content: "x", additional_kwargs: { at: new Date(0) } })],
    ["a human message with files", new HumanMessage({ id: "h1", content: "hi", name: "user-input", additional_kwargs: { files: [{ filename: "a.txt", size: 3 }] } })],
    ["an AI message with tool calls", new AIMessage({ id: "a2", content: "", tool_calls: [{ id: "c1", name: "ls", args: { path: "/" }, type: "tool_call" }] })],
    ["a tool message", new ToolMessage({ content: "ok", tool_call_id: "c1", name: "ls", status: "success" })],
    ["a tool message with an artifact", new ToolMessage({ content: "ok", tool_call_id: "c2", artifact: { rows: [1, 2] } })],
    ["a system message", new SystemMessage({ content: "rules", id: "s1" })],
  ];
  for (const [name, message] of cases) {
    it(`gives what LangChain's serializer gives: ${name}`, () => {
      expect(JSON.stringify(serializeMessage(message))).toBe(JSON.stringify(viaToDict(message)));
    });
  }
});

describe("serializeMessage fast path", () => {
  it("builds a plain token chunk without LangChain's serializer, and leaves anything else to it", () => {
    const plain = chunk({ content: "tok", id: "a1" });
    plain.toDict = () => {
      throw new Error("toDict called");
    };
    expect(serializeMessage(plain)).toMatchObject({ type: "ai", content: "tok", id: "a1" });
    const escaped = chunk({ content: "x", additional_kwargs: { lc: 1 } });
    let calls = 0;
    const original = escaped.toDict.bind(escaped);
    escaped.toDict = () => {
      calls++;
      return original();
    };
    serializeMessage(escaped);
    expect(calls).toBe(1);
  });
});
