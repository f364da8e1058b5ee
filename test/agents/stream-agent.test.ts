import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver, type CheckpointTuple } from "@langchain/langgraph";
import type { RunnableConfig } from "@langchain/core/runnables";
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
});
