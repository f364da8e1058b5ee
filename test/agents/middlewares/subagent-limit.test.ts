import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { SubagentLimitMiddleware } from "../../../src/agents/middlewares/subagent-limit.js";
import { createTaskTool } from "../../../src/tools/builtins/task.js";
import { captureLogs } from "../../support/capture-logs.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const task = (id: string) => ({ name: "task", args: { description: id, prompt: "p" }, id, type: "tool_call" as const });
const aiWith = (calls: { name: string; args: Record<string, unknown>; id: string; type: "tool_call" }[]) =>
  new AIMessage({
    id: "ai",
    content: "",
    tool_calls: calls,
    additional_kwargs: { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: "{}" } })) },
    response_metadata: { finish_reason: "tool_calls" },
  });
const delegations = (ids: string[], run_id?: string) => ids.map((id) => ({ id, status: "completed", ...(run_id ? { run_id } : {}) }));

describe("SubagentLimitMiddleware (agent-factory.md §6.11, AF-060)", () => {
  it("keeps only max_concurrent task calls of one response (AF-060a)", () => {
    const out = new SubagentLimitMiddleware({ maxConcurrent: 2 }).limit(aiWith(["t1", "t2", "t3", "t4"].map(task)), [], { context: { run_id: "r" } });
    expect(out.tool_calls!.map((c) => c.id)).toEqual(["t1", "t2"]);
    expect((out.additional_kwargs.tool_calls as { id: string }[]).map((c) => c.id)).toEqual(["t1", "t2"]);
    expect(String(out.content)).not.toContain("LIMIT");
  });

  it("ends the turn when the run total is used up, counting all delegations without a run id (AF-060b)", async () => {
    const logs = captureLogs();
    try {
      const context: Record<string, unknown> = {};
      const out = new SubagentLimitMiddleware({ maxConcurrent: 3, maxTotal: 3 }).limit(aiWith([task("t4")]), delegations(["t1", "t2", "t3"]), { context });
      expect(out.tool_calls).toEqual([]);
      expect(out.additional_kwargs.tool_calls).toBeUndefined();
      expect(out.response_metadata.finish_reason).toBe("stop");
      expect(String(out.content)).toContain("subagent delegation limit");
      expect(context.stop_reason).toBe("subagent_limit_capped");
      expect(logs.messages().join("\n")).toContain("received no run_id");
    } finally {
      logs.restore();
    }
  });

  it("does not count another run's delegations (AF-060c)", () => {
    const response = aiWith([task("t4")]);
    expect(new SubagentLimitMiddleware({ maxConcurrent: 3, maxTotal: 3 }).limit(response, delegations(["t1", "t2", "t3"]), { context: { run_id: "run-2" } })).toBe(response);
  });

  it("keeps other tool calls and adds the notice when the total is reached (AF-060d)", () => {
    const out = new SubagentLimitMiddleware({ maxTotal: 1 }).limit(
      aiWith([task("t2"), { name: "bash", args: {}, id: "b1", type: "tool_call" }]),
      delegations(["t1"], "run-1"),
      { context: { run_id: "run-1" } },
    );
    expect(out.tool_calls!.map((c) => c.name)).toEqual(["bash"]);
    expect(out.response_metadata.finish_reason).toBe("tool_calls");
    expect(String(out.content)).toContain("subagent delegation limit");
  });

  it("clamps its limits to 1-4 and 1-50", () => {
    const mw = new SubagentLimitMiddleware({ maxConcurrent: 99, maxTotal: 0 });
    expect([mw.maxConcurrent, mw.maxTotal]).toEqual([4, 1]);
  });
});

describe("task tool", () => {
  it("answers with an error naming the missing subagent runtime instead of faking success", async () => {
    const result = (await createTaskTool().invoke({ name: "task", args: { description: "d", prompt: "p" }, id: "c1", type: "tool_call" })) as ToolMessage;
    expect(result.status).toBe("error");
    expect(String(result.content)).toContain("no subagent runtime (SubagentRuntime) is configured");
    expect(result.additional_kwargs.subagent_status).toBe("failed");
  });

  it("runs a known subagent type through a runtime and lists the types for an unknown one", async () => {
    const runtime = { types: ["general-purpose"], run: async ({ prompt }: { prompt: string }) => `did ${prompt}` };
    const t = createTaskTool(runtime);
    expect(String(((await t.invoke({ name: "task", args: { description: "d", prompt: "p" }, id: "c1", type: "tool_call" })) as ToolMessage).content)).toBe("Task Succeeded. Result: did p");
    const bad = (await t.invoke({ name: "task", args: { description: "d", prompt: "p", subagent_type: "x" }, id: "c2", type: "tool_call" })) as ToolMessage;
    expect(String(bad.content)).toContain("Available subagent types: general-purpose");
  });
});

describe("SubagentLimitMiddleware inside an agent", () => {
  it("lets at most max_concurrent task calls run and caps the run total across model calls", async () => {
    const model = new FakeChatModel([
      { tool_calls: ["a", "b", "c", "d"].map((d) => ({ name: "task", args: { description: d, prompt: d } })) },
      { tool_calls: ["e", "f"].map((d) => ({ name: "task", args: { description: d, prompt: d } })) },
      "finished",
    ]);
    const ran: string[] = [];
    const agent = createDeerflowAgent(model, [createTaskTool({ types: ["general-purpose"], run: async ({ prompt }) => (ran.push(prompt), "ok") })], {
      features: { sandbox: false, subagent: new SubagentLimitMiddleware({ maxConcurrent: 2, maxTotal: 3 }) },
      checkpointer: new MemorySaver(),
    });
    const out = (await agent.invoke({ messages: [new HumanMessage("delegate")] } as never, {
      configurable: { thread_id: "t-sub" }, context: { thread_id: "t-sub", run_id: "run-1" }, recursionLimit: 50,
    } as never)) as unknown as { messages: BaseMessage[] };
    expect(ran).toEqual(["a", "b", "e"]);
    const capped = out.messages.filter((m) => AIMessage.isInstance(m))[1] as AIMessage;
    expect(capped.tool_calls!.map((c) => c.args.prompt)).toEqual(["e"]);
    expect(String(capped.content)).toContain("[SUBAGENT LIMIT REACHED]");
    expect(out.messages.at(-1)!.content).toBe("finished");
  });
});
