import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { tool } from "langchain";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { LoopDetectionMiddleware, toolCallKey, toolCallSetHash } from "../../../src/agents/middlewares/loop-detection.js";
import { resolveRunScope } from "../../../src/agents/middlewares/run-scope.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

let aiSeq = 0;
const callMsg = (calls: { name: string; args: Record<string, unknown> }[], content = "") =>
  new AIMessage({ id: `ai-${++aiSeq}`, content, tool_calls: calls.map((c, i) => ({ ...c, id: `c${aiSeq}-${i}`, type: "tool_call" as const })), response_metadata: { finish_reason: "tool_calls" } });
const ls = () => callMsg([{ name: "bash", args: { command: "ls" } }]);
const RUN_A = { context: { thread_id: "t-1", run_id: "run-A" } };
/** Run A's scope: its state lives on its context object (RunScope.owner). */
const SCOPE_A = resolveRunScope(RUN_A);

/**
 * One model call through the middleware: the model answers `response`. Returns the messages the model was sent
 * and what the middleware returned.
 */
async function turn(mw: LoopDetectionMiddleware, response: AIMessage, runtime: Record<string, unknown> = RUN_A, messages: BaseMessage[] = [new HumanMessage("go")]) {
  const handler = vi.fn(async () => response);
  const result = (await mw.wrapModelCall({ messages, runtime, state: { messages } } as never, handler as never)) as unknown as AIMessage;
  return { sent: (handler.mock.calls[0] as unknown as [{ messages: BaseMessage[] }])[0].messages, result };
}

describe("LoopDetectionMiddleware: identical call sets (agent-factory.md §6.12, AF-058)", () => {
  it("stays silent for two repeats, queues a warning at the third without touching the message, and injects it once", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 3, hard_limit: 5 });
    for (let i = 0; i < 2; i++) {
      const r = ls();
      expect((await turn(mw, r)).result).toBe(r);
    }
    expect(mw.pendingWarnings(SCOPE_A)).toEqual([]);
    const third = ls();
    expect((await turn(mw, third)).result).toBe(third);
    expect(mw.pendingWarnings(SCOPE_A)).toHaveLength(1);

    const original = [new HumanMessage("go"), ls(), new ToolMessage({ content: "out", tool_call_id: "x", name: "bash" })];
    const { sent } = await turn(mw, new AIMessage("fine"), RUN_A, original);
    expect(sent.slice(0, 3)).toEqual(original);
    expect(sent).toHaveLength(4);
    const warning = sent[3];
    expect(HumanMessage.isInstance(warning)).toBe(true);
    expect(warning.name).toBe("loop_warning");
    expect(String(warning.content)).toContain("[LOOP DETECTED]");
    expect((await turn(mw, new AIMessage("fine"), RUN_A, original)).sent).toEqual(original);
  });

  it("hard-stops at the limit: same message id, no tool calls, [FORCED STOP] text, finish reason stop, loop_capped", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 4 });
    // One run, one context object (as LangGraph passes it to every node of a run); the stop reason is written on it.
    const context: Record<string, unknown> = { thread_id: "t-1", run_id: "run-A" };
    const run = { context };
    for (let i = 0; i < 3; i++) await turn(mw, ls(), run);
    const last = callMsg([{ name: "bash", args: { command: "ls" } }], "Let me look again");
    const { result: replaced } = await turn(mw, last, run);
    expect(replaced).not.toBe(last);
    expect(replaced.id).toBe(last.id);
    expect(replaced.tool_calls).toEqual([]);
    expect(String(replaced.content)).toContain("Let me look again");
    expect(String(replaced.content)).toContain("[FORCED STOP]");
    expect(replaced.response_metadata.finish_reason).toBe("stop");
    expect(context.stop_reason).toBe("loop_capped");
    expect(mw.consumeStopReason(resolveRunScope(run))).toBe("loop_capped");
    expect(mw.consumeStopReason(resolveRunScope(run))).toBeNull();
  });

  it("does not count different calls as repeats", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3 });
    for (const cmd of ["ls", "pwd", "whoami", "date", "uptime"]) {
      const r = callMsg([{ name: "bash", args: { command: cmd } }]);
      expect((await turn(mw, r)).result).toBe(r);
    }
  });

  it("ignores AI messages without tool calls", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 1, hard_limit: 1 });
    const plain = new AIMessage("plain answer");
    expect((await turn(mw, plain)).result).toBe(plain);
  });

  it("forgets repeats that slid out of the window", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3, window_size: 2 });
    for (const cmd of ["ls", "pwd", "date", "ls", "ls"]) {
      const r = callMsg([{ name: "bash", args: { command: cmd } }]);
      expect((await turn(mw, r)).result).toBe(r);
    }
  });
});

describe("LoopDetectionMiddleware: per-thread, per-run state (AF-058)", () => {
  it("does not inject a warning queued under run A into run B of the same thread", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 5 });
    await turn(mw, ls());
    await turn(mw, ls());
    expect(mw.pendingWarnings(SCOPE_A)).toHaveLength(1);
    const runB = { context: { thread_id: "t-1", run_id: "run-B" } };
    expect((await turn(mw, new AIMessage("hi"), runB)).sent.some((m) => m.name === "loop_warning")).toBe(false);
    // Run A's warning stays with run A (its context object), not with the thread.
    expect(mw.pendingWarnings(SCOPE_A)).toHaveLength(1);
    expect(mw.pendingWarnings(resolveRunScope(runB))).toEqual([]);
  });

  it("without a run context, a thread's next run drops the previous run's state", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 5 });
    const runA = { configurable: { thread_id: "t-9", run_id: "run-A" } };
    const runB = { configurable: { thread_id: "t-9", run_id: "run-B" } };
    await turn(mw, ls(), runA);
    await turn(mw, ls(), runA);
    expect(mw.pendingWarnings(resolveRunScope(runA))).toHaveLength(1);
    expect((await turn(mw, new AIMessage("hi"), runB)).sent.some((m) => m.name === "loop_warning")).toBe(false);
    expect(mw.pendingWarnings(resolveRunScope(runA))).toEqual([]);
  });

  it("a shared instance keeps every live run's state, however many runs are in flight (no LRU eviction)", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 5, max_tracked_threads: 2 });
    const runs = ["a", "b", "c", "d"].map((t) => ({ context: { thread_id: t, run_id: `run-${t}` } }));
    for (const run of runs) await turn(mw, ls(), run);
    for (const run of runs) await turn(mw, ls(), run);
    for (const run of runs) expect(mw.pendingWarnings(resolveRunScope(run))).toHaveLength(1);
  });

  it("keeps threads apart and counts repeats per thread", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3 });
    const other = { context: { thread_id: "t-2", run_id: "run-A" } };
    await turn(mw, ls());
    await turn(mw, ls(), other);
    expect(mw.pendingWarnings(SCOPE_A)).toEqual([]);
    await turn(mw, ls());
    expect(mw.pendingWarnings(SCOPE_A)).toHaveLength(1);
    expect(mw.pendingWarnings(resolveRunScope(other))).toEqual([]);
  });

  it("without a run id, a new human input starts a new run", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 5 });
    const noRun = { configurable: { thread_id: "t-3" } };
    const first = [new HumanMessage({ id: "h1", content: "go" })];
    await turn(mw, ls(), noRun, first);
    await turn(mw, ls(), noRun, first);
    expect(mw.pendingWarnings({ threadId: "t-3", runId: "input:h1" })).toHaveLength(1);
    const second = [...first, new AIMessage("done"), new HumanMessage({ id: "h2", content: "again" })];
    expect((await turn(mw, new AIMessage("ok"), noRun, second)).sent.some((m) => m.name === "loop_warning")).toBe(false);
  });

  it("tracks at most max_tracked_threads threads of runs without a run context", async () => {
    const mw = new LoopDetectionMiddleware({ max_tracked_threads: 2 });
    for (const t of ["a", "b", "c"]) await turn(mw, ls(), { configurable: { thread_id: t, run_id: "r" } });
    expect((mw as unknown as { runs: { size: number } }).runs.size).toBe(2);
  });
});

describe("LoopDetectionMiddleware: per-tool frequency", () => {
  it("warns once per tool at tool_freq_warn and stops at tool_freq_hard_limit, with per-tool overrides", async () => {
    const mw = new LoopDetectionMiddleware({ tool_freq_overrides: { bash: [2, 3] } });
    await turn(mw, callMsg([{ name: "bash", args: { command: "a" } }]));
    await turn(mw, callMsg([{ name: "bash", args: { command: "b" } }]));
    const { sent, result } = await turn(mw, callMsg([{ name: "bash", args: { command: "c" } }]));
    const warning = sent.at(-1)!;
    expect(warning.name).toBe("loop_warning");
    expect(String(warning.content)).toContain("Tool bash has been called 2 times");
    expect(String(result.content)).toContain("[FORCED STOP] Tool bash called 3 times");
  });

  it("sends at most 4 warnings per run", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 1, hard_limit: 50 });
    let injected = 0;
    for (let i = 0; i < 7; i++) {
      const { sent } = await turn(mw, callMsg([{ name: "bash", args: { command: `cmd-${i}` } }]));
      if (sent.some((m) => m.name === "loop_warning")) injected++;
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

describe("LoopDetectionMiddleware inside an agent", () => {
  it("warns the model after the third identical call and stops the run at the fifth", async () => {
    const bash = tool(async () => "file.txt", { name: "bash", description: "run", schema: z.object({ command: z.string() }) });
    // Always asks for `bash {command: "ls"}`.
    const model = new FakeChatModel([], { tool_calls: [{ name: "bash", args: { command: "ls" } }] });
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

describe("LoopDetectionMiddleware: one agent reused across runs and threads", () => {
  it("adds no graph node and starts every run with a clean slate", async () => {
    const bash = tool(async () => "file.txt", { name: "bash", description: "run", schema: z.object({ command: z.string() }) });
    // Always asks for `bash {command: "ls"}`.
    const model = new FakeChatModel([], { tool_calls: [{ name: "bash", args: { command: "ls" } }] });
    const agent = createDeerflowAgent(model, [bash], { features: { sandbox: false }, checkpointer: new MemorySaver() });
    const nodes = Object.keys((agent as unknown as { graph: { nodes: Record<string, unknown> } }).graph.nodes);
    expect(nodes.some((n) => n.startsWith("LoopDetectionMiddleware"))).toBe(false);
    for (const [thread, run] of [["t-1", "r1"], ["t-1", "r2"], ["t-2", "r1"]]) {
      model.calls = [];
      const out = (await agent.invoke({ messages: [new HumanMessage("list files")] } as never, {
        configurable: { thread_id: thread }, context: { thread_id: thread, run_id: run }, recursionLimit: 100,
      } as never)) as unknown as { messages: BaseMessage[] };
      // Each run sees its own 5 calls: warned before the 4th, stopped at the 5th, regardless of earlier runs.
      expect(model.calls.map((msgs) => msgs.some((m) => m.name === "loop_warning"))).toEqual([false, false, false, true, false]);
      expect(String(out.messages.at(-1)!.content)).toContain("[FORCED STOP]");
    }
  });
});
