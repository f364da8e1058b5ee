import { AIMessageChunk } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { toWireEvents, type WireEvent } from "../../src/runtime/wire/wire-events.js";

async function* chunks(items: unknown[]) {
  for (const item of items) yield item;
}

describe("toWireEvents token frames", () => {
  it("serializes each token frame as its data, converting a model call's shared metadata once", async () => {
    let reads = 0;
    // LangGraph hands every token of one model call the same metadata object.
    const meta = { langgraph_node: "model_request", run_id: "r1", tags: [] as string[], get thread_id() {
      reads++;
      return "t1";
    } };
    const other = { langgraph_node: "model_request", run_id: "r2" };
    const source = [
      ["messages", [new AIMessageChunk({ id: "a1", content: "Hel" }), meta]],
      ["messages", [new AIMessageChunk({ id: "a1", content: "lo" }), meta]],
      ["values", { messages: [] }],
      ["messages", [new AIMessageChunk({ id: "a1", content: "!" }), meta]],
      ["messages", [new AIMessageChunk({ id: "a2", content: "x" }), other]],
    ];
    const events: WireEvent[] = [];
    for await (const e of toWireEvents(chunks(source))) events.push(e);
    expect(events.map((e) => e.event)).toEqual(["messages", "messages", "values", "messages", "messages"]);
    const tokens = events.filter((e) => e.event === "messages");
    for (const e of tokens) expect(e.json).toBe(JSON.stringify(e.data));
    expect(tokens.map((e) => (e.data as [{ content: string }])[0].content)).toEqual(["Hel", "lo", "!", "x"]);
    expect((tokens[0].data as unknown[])[1]).toEqual({ langgraph_node: "model_request", run_id: "r1", tags: [], thread_id: "t1" });
    expect((tokens[3].data as unknown[])[1]).toEqual(other);
    expect(reads).toBe(1);
  });
});
