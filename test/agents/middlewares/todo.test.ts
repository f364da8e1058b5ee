import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { TodoMiddleware } from "../../../src/agents/middlewares/todo.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const TODOS = [
  { content: "Step 1", status: "completed" },
  { content: "Step 2", status: "in_progress" },
  { content: "Step 3", status: "pending" },
];
type Out = { messages: BaseMessage[]; todos: typeof TODOS | null };
const run = (agent: ReturnType<typeof createDeerflowAgent>, text: string, thread = "t-todo", runId?: string) =>
  agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: thread }, context: { thread_id: thread, ...(runId ? { run_id: runId } : {}) } } as never) as unknown as Promise<Out>;
const systemText = (model: FakeChatModel, i: number) => model.calls[i][0].text;

describe("TodoMiddleware (agent-factory.md §6.7, AF-061)", () => {
  it("brings write_todos, appends the todo prompt to the system message, and writes the todos channel", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "write_todos", args: { todos: TODOS.map((t) => ({ ...t, status: "completed" })) } }] }, "all done"]);
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false }, planMode: true, systemPrompt: "You are helpful.", checkpointer: new MemorySaver() });
    const out = await run(agent, "plan it");
    expect(out.todos).toHaveLength(3);
    expect(String(out.messages[2].content)).toContain("Updated todo list to");
    expect(systemText(model, 0)).toContain("You are helpful.");
    expect(systemText(model, 0)).toContain("write_todos");
    expect(out.messages.at(-1)!.content).toBe("all done");
  });

  it("asks again at most twice per run with a hidden todo_completion_reminder listing only open items, keeping each answer", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "write_todos", args: { todos: TODOS } }] }, "premature 1", "premature 2", "premature 3"]);
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false }, planMode: true, checkpointer: new MemorySaver() });
    const out = await run(agent, "do the plan", "t-todo", "run-1");
    expect(model.calls).toHaveLength(4);
    const reminders = model.calls.map((msgs) => msgs.filter((m) => m.name === "todo_completion_reminder"));
    expect(reminders.map((r) => r.length)).toEqual([0, 0, 1, 1]);
    const reminder = reminders[2][0];
    expect(HumanMessage.isInstance(reminder)).toBe(true);
    expect(reminder.additional_kwargs.hide_from_ui).toBe(true);
    expect(String(reminder.content)).toContain("Step 2");
    expect(String(reminder.content)).toContain("Step 3");
    expect(String(reminder.content)).not.toContain("Step 1");
    expect(model.calls[2].at(-1)).toBe(reminder);
    // Persisted: every answer in order, no reminder.
    expect(out.messages.map((m) => m.content).slice(-3)).toEqual(["premature 1", "premature 2", "premature 3"]);
    expect(out.messages.some((m) => m.name === "todo_completion_reminder")).toBe(false);
    // A new run gets its own two reminders; without open todos there are none.
    await run(agent, "go on", "t-todo", "run-2");
    expect(model.calls).toHaveLength(7);
  });

  it("does not remind when the model still means to call a tool", async () => {
    const mw = new TodoMiddleware();
    let calls = 0;
    const state = { messages: [new HumanMessage("x")], todos: TODOS };
    const intents = [
      new AIMessage({ content: "", tool_calls: [{ name: "bash", args: {}, id: "1", type: "tool_call" }] }),
      new AIMessage({ content: "", invalid_tool_calls: [{ name: "bash", args: "{", id: "2", error: "bad", type: "invalid_tool_call" }] }),
      new AIMessage({ content: "", additional_kwargs: { tool_calls: [{ id: "3", type: "function", function: { name: "bash", arguments: "{}" } }] } }),
      new AIMessage({ content: "", additional_kwargs: { function_call: { name: "bash", arguments: "{}" } } }),
      new AIMessage({ content: "x", response_metadata: { finish_reason: "tool_calls" } }),
    ];
    for (const response of intents) {
      await mw.wrapModelCall({ messages: state.messages, state, runtime: { context: { thread_id: "t", run_id: "r" } }, systemMessage: new (await import("@langchain/core/messages")).SystemMessage("") } as never, (async () => {
        calls++;
        return response;
      }) as never);
    }
    expect(calls).toBe(intents.length);
  });

  it("reminds the model of its todos when no write_todos call is visible in the request", async () => {
    const mw = new TodoMiddleware();
    const { SystemMessage } = await import("@langchain/core/messages");
    let sent: BaseMessage[] = [];
    const state = { messages: [new HumanMessage("x")], todos: [{ content: "Step 9", status: "completed" }] };
    await mw.wrapModelCall({ messages: state.messages, state, runtime: {}, systemMessage: new SystemMessage("") } as never, (async (r: { messages: BaseMessage[] }) => {
      sent = r.messages;
      return new AIMessage("ok");
    }) as never);
    expect(sent.at(-1)!.name).toBe("todo_reminder");
    expect(String(sent.at(-1)!.content)).toContain("- [completed] Step 9");
  });

  it("rejects parallel write_todos calls in one response with an error result each", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "write_todos", args: { todos: [] } }, { name: "write_todos", args: { todos: [] } }] }, "ok"]);
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false }, planMode: true });
    const out = await run(agent, "plan");
    const results = out.messages.filter((m) => m.getType() === "tool");
    expect(results).toHaveLength(2);
    for (const r of results) expect(String(r.content)).toContain("should never be called multiple times in parallel");
    expect(out.todos ?? null).toBeNull();
  });
});
