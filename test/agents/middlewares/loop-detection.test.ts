import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "langchain";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { LoopDetectionMiddleware, toolCallKey, toolCallSetHash } from "../../../src/agents/middlewares/loop-detection.js";

let aiSeq = 0;
const callMsg = (calls: { name: string; args: Record<string, unknown> }[], content = "") =>
  new AIMessage({ id: `ai-${++aiSeq}`, content, tool_calls: calls.map((c, i) => ({ ...c, id: `c${aiSeq}-${i}`, type: "tool_call" as const })), response_metadata: { finish_reason: "tool_calls" } });
const ls = () => callMsg([{ name: "bash", args: { command: "ls" } }]);
const state = (m: AIMessage) => ({ messages: [new HumanMessage("go"), m] });

/** Sends one model request through wrapModelCall and returns the messages the model would see. */
async function nextRequest(mw: LoopDetectionMiddleware, messages: BaseMessage[] = [new HumanMessage("go")]) {
  const handler = vi.fn(async (r: { messages: BaseMessage[] }) => r);
  await mw.wrapModelCall({ messages } as never, handler as never);
  return (handler.mock.calls[0][0] as { messages: BaseMessage[] }).messages;
}

describe("LoopDetectionMiddleware: identical call sets (agent-factory.md §6.12, AF-058)", () => {
  it("stays silent for two repeats, queues a warning at the third without touching state, and injects it once", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 3, hard_limit: 5 });
    expect(mw.afterModel(state(ls()))).toBeUndefined();
    expect(mw.afterModel(state(ls()))).toBeUndefined();
    expect((await nextRequest(mw)).length).toBe(1);
    expect(mw.afterModel(state(ls()))).toBeUndefined();

    const original = [new HumanMessage("go"), ls(), new ToolMessage({ content: "out", tool_call_id: "x", name: "bash" })];
    const sent = await nextRequest(mw, original);
    expect(sent.slice(0, 3)).toEqual(original);
    expect(sent).toHaveLength(4);
    const warning = sent[3];
    expect(HumanMessage.isInstance(warning)).toBe(true);
    expect(warning.name).toBe("loop_warning");
    expect(String(warning.content)).toContain("[LOOP DETECTED]");
    expect(await nextRequest(mw, original)).toEqual(original);
  });

  it("hard-stops at the limit: same message id, no tool calls, [FORCED STOP] text, finish reason stop, loop_capped in context", () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 4 });
    for (let i = 0; i < 3; i++) expect(mw.afterModel(state(ls()))).toBeUndefined();
    const last = callMsg([{ name: "bash", args: { command: "ls" } }], "Let me look again");
    const context: Record<string, unknown> = {};
    const update = mw.afterModel(state(last), { context });
    const replaced = update?.messages[0] as AIMessage;
    expect(replaced.id).toBe(last.id);
    expect(replaced.tool_calls).toEqual([]);
    expect(String(replaced.content)).toContain("Let me look again");
    expect(String(replaced.content)).toContain("[FORCED STOP]");
    expect(replaced.response_metadata.finish_reason).toBe("stop");
    expect(context.stop_reason).toBe("loop_capped");
  });

  it("does not count different calls as repeats", () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3 });
    for (const cmd of ["ls", "pwd", "whoami", "date", "uptime"]) expect(mw.afterModel(state(callMsg([{ name: "bash", args: { command: cmd } }])))).toBeUndefined();
  });

  it("ignores AI messages without tool calls", () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 1, hard_limit: 1 });
    expect(mw.afterModel({ messages: [new AIMessage("plain answer")] })).toBeUndefined();
  });

  it("forgets repeats that slid out of the window", () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3, window_size: 2 });
    mw.afterModel(state(ls()));
    mw.afterModel(state(callMsg([{ name: "bash", args: { command: "pwd" } }])));
    mw.afterModel(state(callMsg([{ name: "bash", args: { command: "date" } }])));
    expect(mw.afterModel(state(ls()))).toBeUndefined();
    expect(mw.afterModel(state(ls()))).toBeUndefined();
  });
});

describe("LoopDetectionMiddleware: per-tool frequency", () => {
  it("warns once per tool at tool_freq_warn and stops at tool_freq_hard_limit, with per-tool overrides", async () => {
    const mw = new LoopDetectionMiddleware({ tool_freq_overrides: { bash: [2, 3] } });
    expect(mw.afterModel(state(callMsg([{ name: "bash", args: { command: "a" } }])))).toBeUndefined();
    expect(mw.afterModel(state(callMsg([{ name: "bash", args: { command: "b" } }])))).toBeUndefined();
    const warning = (await nextRequest(mw)).at(-1)!;
    expect(warning.name).toBe("loop_warning");
    expect(String(warning.content)).toContain("Tool bash has been called 2 times");
    const update = mw.afterModel(state(callMsg([{ name: "bash", args: { command: "c" } }])));
    expect(String((update?.messages[0] as AIMessage).content)).toContain("[FORCED STOP] Tool bash called 3 times");
  });

  it("sends at most 4 warnings per run", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 1, hard_limit: 50 });
    let injected = 0;
    for (let i = 0; i < 6; i++) {
      mw.afterModel(state(callMsg([{ name: "bash", args: { command: `cmd-${i}` } }])));
      if ((await nextRequest(mw)).some((m) => m.name === "loop_warning")) injected++;
    }
    expect(injected).toBe(4);
  });
});

describe("toolCallKey / toolCallSetHash", () => {
  it("keys read_file by path and 200-line bucket", () => {
    expect(toolCallKey({ name: "read_file", args: { path: "/a", start_line: 10, end_line: 50 } })).toBe(
      toolCallKey({ name: "read_file", args: { path: "/a", start_line: 150, end_line: 199 } }),
    );
    expect(toolCallKey({ name: "read_file", args: { path: "/a", start_line: 10 } })).not.toBe(toolCallKey({ name: "read_file", args: { path: "/a", start_line: 250 } }));
  });

  it("keys other tools by salient fields only, and write_file by all arguments", () => {
    expect(toolCallKey({ name: "web_search", args: { query: "x", max_results: 5 } })).toBe(toolCallKey({ name: "web_search", args: { query: "x", max_results: 9 } }));
    expect(toolCallKey({ name: "write_file", args: { path: "/a", content: "1" } })).not.toBe(toolCallKey({ name: "write_file", args: { path: "/a", content: "2" } }));
  });

  it("parses JSON-string arguments and is independent of key and call order", () => {
    expect(toolCallKey({ name: "t", args: '{"b":1,"a":2}' })).toBe(toolCallKey({ name: "t", args: { a: 2, b: 1 } }));
    const a = { name: "x", args: { q: 1 } };
    const b = { name: "y", args: { q: 2 } };
    expect(toolCallSetHash([a, b])).toBe(toolCallSetHash([b, a]));
  });
});

/** A model that always asks for `bash {command: "ls"}` and records what it was sent. */
class StubbornModel extends BaseChatModel {
  calls: BaseMessage[][] = [];
  constructor() {
    super({});
  }
  _llmType() {
    return "stubborn";
  }
  override bindTools(): this {
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.calls.push(messages);
    const message = new AIMessage({ content: "", tool_calls: [{ name: "bash", args: { command: "ls" }, id: `call_${this.calls.length}`, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}

describe("LoopDetectionMiddleware inside an agent", () => {
  it("warns the model after the third identical call and stops the run at the fifth", async () => {
    const bash = tool(async () => "file.txt", { name: "bash", description: "run", schema: z.object({ command: z.string() }) });
    const model = new StubbornModel();
    const agent = createDeerflowAgent(model, [bash], { features: { sandbox: false } });
    const out = (await agent.invoke({ messages: [new HumanMessage("list files")] } as never, { recursionLimit: 100 } as never)) as unknown as {
      messages: BaseMessage[];
    };
    expect(model.calls).toHaveLength(5);
    const warned = model.calls.map((msgs) => msgs.some((m) => m.name === "loop_warning"));
    expect(warned).toEqual([false, false, false, true, false]);
    const last = out.messages.at(-1) as AIMessage;
    expect(AIMessage.isInstance(last)).toBe(true);
    expect(last.tool_calls).toEqual([]);
    expect(String(last.content)).toContain("[FORCED STOP]");
    expect(out.messages.filter((m) => ToolMessage.isInstance(m))).toHaveLength(4);
    expect(out.messages.some((m) => m.name === "loop_warning")).toBe(false);
  });
});
