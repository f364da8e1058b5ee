import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver, type CheckpointTuple } from "@langchain/langgraph";
import type { RunnableConfig } from "@langchain/core/runnables";
import { getEventListeners } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../src/agents/factory.js";
import { streamAgent } from "../../src/agents/stream-agent.js";
import { ScriptedChatModel } from "../../src/models/scripted-chat-model.js";

/** A MemorySaver that counts whole-state reads. */
class CountingSaver extends MemorySaver {
  reads = 0;
  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    this.reads++;
    return super.getTuple(config);
  }
}

let home: string;
beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "stream-agent-"));
  process.env.DEER_FLOW_HOME = home;
});
afterEach(() => {
  delete process.env.DEER_FLOW_HOME;
  rmSync(home, { recursive: true, force: true });
});

async function turn(saver: CountingSaver, text: string): Promise<Record<string, unknown>> {
  const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: saver });
  const context = { thread_id: "t-stream", run_id: `run-${text}`, user_id: "u1" };
  const chunks = await streamAgent(agent, { messages: [new HumanMessage(text)] }, { context, configurable: { thread_id: "t-stream" }, recursionLimit: 50, streamMode: ["values"] });
  let last: Record<string, unknown> = {};
  for await (const [, values] of chunks as AsyncIterable<[string, Record<string, unknown>]>) last = values;
  return last;
}

describe("streamAgent", () => {
  it("reads the thread's state once per run (the graph's own read), with the same result turn after turn", async () => {
    const saver = new CountingSaver();
    await turn(saver, "first");
    saver.reads = 0;
    const state = await turn(saver, "second");
    // createAgent's own `stream` would read it a second time first, to merge it into the input.
    expect(saver.reads).toBe(1);
    expect((state.messages as BaseMessage[]).map((m) => String(m.content))).toEqual(["first", "You said: first", "second", "You said: second"]);
    expect(state.thread_data).toMatchObject({ uploads_path: "/mnt/user-data/uploads" });
  });

  // streamAgent iterates a compiled graph's chunk generator itself instead of going through `graph.stream()`'s web
  // streams; these pin that it behaves as `stream()` does.
  const human = (text: string) => ({ messages: [new HumanMessage(text)] });
  const options = (thread: string, extra: Record<string, unknown> = {}) => ({
    context: { thread_id: thread, run_id: `run-${thread}`, user_id: "u1" },
    configurable: { thread_id: thread },
    recursionLimit: 50,
    streamMode: ["values", "messages"],
    ...extra,
  });
  /** A chunk reduced to what does not vary between runs (message ids, run ids). */
  const shape = ([mode, payload]: [string, unknown]): unknown =>
    mode === "messages"
      ? [mode, String((payload as [BaseMessage])[0].content), (payload as [BaseMessage, Record<string, unknown>])[1].langgraph_node]
      : [mode, ((payload as { messages: BaseMessage[] }).messages ?? []).map((m) => `${m.type}:${String(m.content)}`)];

  it("yields what the graph's own stream() yields, chunk for chunk", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    const ours: unknown[] = [];
    for await (const chunk of (await streamAgent(agent, human("hello there"), options("t-ours"))) as AsyncIterable<[string, unknown]>) ours.push(shape(chunk));
    const theirs: unknown[] = [];
    const graph = (agent as unknown as { graph: { stream(i: unknown, o: unknown): Promise<AsyncIterable<[string, unknown]>> } }).graph;
    for await (const chunk of await graph.stream(human("hello there"), options("t-theirs"))) theirs.push(shape(chunk));
    expect(ours).toEqual(theirs);
    expect(ours.length).toBeGreaterThan(3);
    expect(ours.at(-1)).toEqual(["values", ["human:hello there", "ai:You said: hello there"]]);
  });

  it("stops the run when the consumer stops reading, and leaves no listener on the caller's signal", async () => {
    const saver = new MemorySaver();
    // 10 s a token: a run that went on after the consumer left would hold return() (and this test) for minutes.
    const agent = createDeerflowAgent(new ScriptedChatModel({ tokenDelayMs: 10_000 }), null, { checkpointer: saver });
    const caller = new AbortController();
    const chunks = await streamAgent(agent, human("say a lot"), options("t-early", { signal: caller.signal }));
    for await (const [mode] of chunks as AsyncIterable<[string, unknown]>) {
      expect(mode).toBe("values");
      break;
    }
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
    const state = await saver.getTuple({ configurable: { thread_id: "t-early" } });
    const stored = (state?.checkpoint.channel_values.messages ?? []) as BaseMessage[];
    expect(stored.map((m) => m.type)).not.toContain("ai");
  });

  it("ends the run when the caller's signal aborts", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({ tokenDelayMs: 10_000 }), null, { checkpointer: new MemorySaver() });
    const caller = new AbortController();
    const chunks = await streamAgent(agent, human("say a lot"), options("t-abort", { signal: caller.signal }));
    const seen: string[] = [];
    const read = (async () => {
      for await (const [mode] of chunks as AsyncIterable<[string, unknown]>) {
        seen.push(mode);
        caller.abort(new Error("client went away"));
      }
    })();
    await expect(read).rejects.toThrow();
    expect(seen).toEqual(["values"]);
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
  });

  it("delivers every chunk emitted before a failure, then the failure, leaving at most graph.stream()'s one listener on the caller's signal", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    const caller = new AbortController();
    const chunks = await streamAgent(agent, human("!fail the model is down"), options("t-fail", { signal: caller.signal }));
    const seen: unknown[] = [];
    await expect(
      (async () => {
        for await (const chunk of chunks as AsyncIterable<[string, unknown]>) seen.push(shape(chunk));
      })(),
    ).rejects.toThrow("the model is down");
    expect(seen).toEqual([["values", ["human:!fail the model is down"]]]);
    // LangGraph's stream() joins the caller's signal with a listener it does not remove (released with the signal).
    expect(getEventListeners(caller.signal, "abort").length).toBeLessThanOrEqual(1);
  });

  it("leaves at most graph.stream()'s one listener on the caller's signal after a run that ends normally", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    const caller = new AbortController();
    let n = 0;
    for await (const _ of (await streamAgent(agent, human("hi"), options("t-ok", { signal: caller.signal }))) as AsyncIterable<unknown>) n++;
    expect(n).toBeGreaterThan(1);
    // LangGraph's stream() joins the caller's signal with a listener it does not remove (released with the signal).
    expect(getEventListeners(caller.signal, "abort").length).toBeLessThanOrEqual(1);
  });

  /** Counts how the graph's root run ends, as a tracer sees it (`handleChainEnd` / `handleChainError` without a parent). */
  class RootRuns extends BaseCallbackHandler {
    name = "root-runs";
    override awaitHandlers = true;
    ended = 0;
    errored = 0;
    override handleChainEnd(_o: unknown, _id: string, parentRunId?: string) {
      if (!parentRunId) this.ended++;
    }
    override handleChainError(_e: unknown, _id: string, parentRunId?: string) {
      if (!parentRunId) this.errored++;
    }
  }
  const slowAgent = () => createDeerflowAgent(new ScriptedChatModel({ tokenDelayMs: 10_000 }), null, { checkpointer: new MemorySaver() });

  it("reports the root run as failed to the callbacks when the consumer stops early, as graph.stream() does", async () => {
    const roots = new RootRuns();
    const chunks = await streamAgent(slowAgent(), human("say a lot"), options("t-root-break", { callbacks: [roots] }));
    for await (const _ of chunks as AsyncIterable<unknown>) break;
    expect({ ended: roots.ended, errored: roots.errored }).toEqual({ ended: 0, errored: 1 });
  });

  it("reports the root run as failed when the caller aborts while the consumer is busy between two reads", async () => {
    const roots = new RootRuns();
    const caller = new AbortController();
    const chunks = await streamAgent(slowAgent(), human("say a lot"), options("t-root-abort", { callbacks: [roots], signal: caller.signal }));
    await expect(
      (async () => {
        for await (const _ of chunks as AsyncIterable<unknown>) {
          // The consumer is busy (publishing, yielding a turn) when the cancel arrives; then it reads again.
          caller.abort(new Error("cancelled"));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })(),
    ).rejects.toThrow();
    expect({ ended: roots.ended, errored: roots.errored }).toEqual({ ended: 0, errored: 1 });
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
  });

  it("reports the root run as failed when the consumer's own code throws mid-stream", async () => {
    const roots = new RootRuns();
    const chunks = await streamAgent(slowAgent(), human("say a lot"), options("t-root-throw", { callbacks: [roots] }));
    await expect(
      (async () => {
        for await (const _ of chunks as AsyncIterable<unknown>) throw new Error("bridge is full");
      })(),
    ).rejects.toThrow("bridge is full");
    expect({ ended: roots.ended, errored: roots.errored }).toEqual({ ended: 0, errored: 1 });
  });

  it("reports a completed run's root once, as ended", async () => {
    const roots = new RootRuns();
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    for await (const _ of (await streamAgent(agent, human("hi"), options("t-root-ok", { callbacks: [roots] }))) as AsyncIterable<unknown>);
    expect({ ended: roots.ended, errored: roots.errored }).toEqual({ ended: 1, errored: 0 });
  });
});
