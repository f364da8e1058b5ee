import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DanglingToolCallMiddleware, repairToolCallHistory } from "../../../src/agents/middlewares/dangling-tool-call.js";
import { getLogger, setLogger } from "../../../src/logger.js";

const ai = (calls: { id?: string; name: string; args?: Record<string, unknown> }[], id = "ai-1") =>
  new AIMessage({ id, content: "", tool_calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args ?? {}, type: "tool_call" as const })) });
const result = (id: string, name = "t", content = `result ${id}`) => new ToolMessage({ content, tool_call_id: id, name });
const shape = (msgs: BaseMessage[]) => msgs.map((m) => (ToolMessage.isInstance(m) ? `tool:${m.tool_call_id}` : m.getType()));

describe("repairToolCallHistory (agent-factory.md §6.4)", () => {
  it("returns the very same list when nothing needs repair", () => {
    const msgs = [new SystemMessage("s"), new HumanMessage("hi"), ai([{ id: "a", name: "t" }]), result("a"), new AIMessage("done")];
    const out = repairToolCallHistory(msgs);
    expect(out.messages).toBe(msgs);
    expect(out).toMatchObject({ orphans: 0, placeholders: 0 });
  });

  it("adds an 'interrupted' error result for a call without a result", () => {
    const out = repairToolCallHistory([new HumanMessage("hi"), ai([{ id: "a", name: "web_search" }]), new HumanMessage("again")]);
    expect(shape(out.messages)).toEqual(["human", "ai", "tool:a", "human"]);
    const placeholder = out.messages[2] as ToolMessage;
    expect(placeholder.status).toBe("error");
    expect(placeholder.name).toBe("web_search");
    expect(String(placeholder.content)).toContain("interrupted");
    expect(out.placeholders).toBe(1);
  });

  it("regroups results right after their call, in call order", () => {
    const msgs = [new HumanMessage("hi"), ai([{ id: "a", name: "t" }, { id: "b", name: "t" }]), new HumanMessage("interjection"), result("b"), result("a")];
    const out = repairToolCallHistory(msgs);
    expect(shape(out.messages)).toEqual(["human", "ai", "tool:a", "tool:b", "human"]);
    expect(out.placeholders).toBe(0);
  });

  it("drops orphan results whose call is absent and counts them", () => {
    const out = repairToolCallHistory([new HumanMessage("hi"), result("ghost"), new AIMessage("done")]);
    expect(shape(out.messages)).toEqual(["human", "ai"]);
    expect(out.orphans).toBe(1);
  });

  it("gives a blank call id a stable synthetic id and answers it", () => {
    const msgs = [new HumanMessage("hi"), ai([{ id: "", name: "t" }])];
    const a = repairToolCallHistory(msgs);
    const b = repairToolCallHistory(msgs);
    const call = (a.messages[1] as AIMessage).tool_calls![0];
    expect(call.id).toBe("deerflow_synthetic_tool_call_1_tc_0");
    expect((a.messages[2] as ToolMessage).tool_call_id).toBe(call.id);
    expect((b.messages[1] as AIMessage).tool_calls![0].id).toBe(call.id);
    expect(a.messages[1].id).toBe("ai-1");
  });

  it("renames a blank tool name to unknown_tool with an empty-name recovery text", () => {
    const out = repairToolCallHistory([ai([{ id: "x", name: "" }], "ai-9")]);
    expect((out.messages[0] as AIMessage).tool_calls![0].name).toBe("unknown_tool");
    const placeholder = out.messages[1] as ToolMessage;
    expect(placeholder.name).toBe("unknown_tool");
    expect(String(placeholder.content)).toContain("empty tool name");
  });

  it("answers an invalid tool call with an 'arguments were invalid' error including the parser message", () => {
    const msg = new AIMessage({
      id: "ai-2",
      content: "",
      invalid_tool_calls: [{ id: "bad-1", name: "write_file", args: "{not json", error: "Unexpected token n", type: "invalid_tool_call" }],
    });
    const out = repairToolCallHistory([new HumanMessage("hi"), msg]);
    const placeholder = out.messages[2] as ToolMessage;
    expect(placeholder.tool_call_id).toBe("bad-1");
    expect(placeholder.status).toBe("error");
    expect(String(placeholder.content)).toContain("write_file failed before execution");
    expect(String(placeholder.content)).toContain("Unexpected token n");
  });

  it("keeps results of the first duplicate and never duplicates a result", () => {
    const out = repairToolCallHistory([ai([{ id: "a", name: "t" }]), result("a", "t", "first"), result("a", "t", "second")]);
    expect(shape(out.messages)).toEqual(["ai", "tool:a"]);
    expect(out.messages[1].content).toBe("first");
  });
});

describe("DanglingToolCallMiddleware.wrapModelCall", () => {
  const original = getLogger();
  afterEach(() => setLogger(original));

  it("passes the request through unchanged when nothing needs repair", async () => {
    const request = { messages: [new HumanMessage("hi")], tools: [] };
    const handler = vi.fn(async (r: unknown) => r);
    await new DanglingToolCallMiddleware().wrapModelCall(request as never, handler);
    expect(handler.mock.calls[0][0]).toBe(request);
  });

  it("hands the model a repaired copy, leaves the request's list untouched and logs the counts", async () => {
    const lines: { msg: string; orphans: number; placeholders: number }[] = [];
    setLogger(pino({ level: "warn" }, { write: (s: string) => void lines.push(JSON.parse(s)) }));
    const messages = [new HumanMessage("hi"), ai([{ id: "a", name: "t" }]), result("ghost")];
    const request = { messages, tools: [] };
    const handler = vi.fn(async (r: unknown) => r);
    await new DanglingToolCallMiddleware().wrapModelCall(request as never, handler);
    const sent = handler.mock.calls[0][0] as { messages: BaseMessage[]; tools: unknown[] };
    expect(shape(sent.messages)).toEqual(["human", "ai", "tool:a"]);
    expect(sent.tools).toBe(request.tools);
    expect(shape(messages)).toEqual(["human", "ai", "tool:ghost"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ orphans: 1, placeholders: 1 });
  });
});
