import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { createSummarizationMiddleware, SummarizationMiddleware } from "../../../src/agents/middlewares/summarization.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

type Out = { messages: BaseMessage[]; summary_text: string | null };
const turnConfig = { configurable: { thread_id: "t-sum" } };

describe("SummarizationMiddleware (agent-factory.md §6.6)", () => {
  it("compacts the history into summary_text once the trigger is met, keeping the recent messages and the model's answer", async () => {
    const summarizer = new FakeChatModel(["User is planning a trip; prefers trains."]);
    const model = new FakeChatModel(["r1", "r2", "r3"]);
    const mw = new SummarizationMiddleware({ model: summarizer, trigger: { type: "messages", value: 5 }, keep: { type: "messages", value: 2 } });
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false, summarization: mw }, checkpointer: new MemorySaver() });
    await agent.invoke({ messages: [new HumanMessage("I plan a trip")] } as never, turnConfig as never);
    await agent.invoke({ messages: [new HumanMessage("I like trains")] } as never, turnConfig as never);
    const out = (await agent.invoke({ messages: [new HumanMessage("Where to?")] } as never, turnConfig as never)) as unknown as Out;
    expect(out.summary_text).toBe("User is planning a trip; prefers trains.");
    // Kept: the last 2 of the 5 messages before the call (the newest user message among them), then the answer.
    expect(out.messages.map((m) => m.content)).toEqual(["r2", "Where to?", "r3"]);
    const sent = model.calls[2];
    expect(sent[0].name).toBe("summary");
    expect(String(sent[0].content)).toContain("User is planning a trip");
    expect(sent.slice(1).map((m) => m.content)).toEqual(["r2", "Where to?"]);
    const prompt = String(summarizer.calls[0][0].content);
    expect(prompt).toContain("<existing_summary>");
    expect(prompt).toContain("<new_messages>");
    expect(prompt).toContain("I plan a trip");
    // Later calls keep receiving the summary without re-summarizing.
    await agent.invoke({ messages: [new HumanMessage("ok")] } as never, turnConfig as never);
    expect(model.calls[3][0].name).toBe("summary");
    expect(summarizer.calls).toHaveLength(1);
  });

  it("keeps the history untouched when the summary model fails", async () => {
    const mw = new SummarizationMiddleware({ model: new FakeChatModel([new Error("down")]), trigger: { type: "messages", value: 1 }, keep: { type: "messages", value: 1 } });
    const agent = createDeerflowAgent(new FakeChatModel(["a1", "a2"]), null, { features: { sandbox: false, summarization: mw }, checkpointer: new MemorySaver() });
    await agent.invoke({ messages: [new HumanMessage("one")] } as never, turnConfig as never);
    const out = (await agent.invoke({ messages: [new HumanMessage("two")] } as never, turnConfig as never)) as unknown as Out;
    expect(out.messages.map((m) => m.content)).toEqual(["one", "a1", "two", "a2"]);
    expect(out.summary_text ?? null).toBeNull();
  });

  it("never cuts between an AI tool call and its results, and rescues the latest user message", () => {
    const mw = new SummarizationMiddleware({ model: new FakeChatModel(), keep: { type: "messages", value: 2 } });
    const history = [
      new HumanMessage("q"),
      new AIMessage({ content: "", tool_calls: [{ name: "t", args: {}, id: "c1", type: "tool_call" }, { name: "t", args: {}, id: "c2", type: "tool_call" }] }),
      new ToolMessage({ content: "1", tool_call_id: "c1" }),
      new ToolMessage({ content: "2", tool_call_id: "c2" }),
    ];
    expect(mw.cutoff(history)).toBe(1);
  });

  it("rescues the newest user message when the cut would summarize it away", async () => {
    const mw = new SummarizationMiddleware({ model: new FakeChatModel(["S"]), trigger: { type: "messages", value: 1 }, keep: { type: "messages", value: 1 } });
    const ai = new AIMessage({ id: "a2", content: "", tool_calls: [{ name: "t", args: {}, id: "c1", type: "tool_call" }] });
    const history = [new HumanMessage({ id: "q1", content: "q1" }), new AIMessage({ id: "a1", content: "a1" }), new HumanMessage({ id: "q2", content: "q2" }), ai, new ToolMessage({ id: "t1", content: "r", tool_call_id: "c1" })];
    let sent: BaseMessage[] = [];
    const result = await mw.wrapModelCall({ messages: history, state: { messages: history } } as never, (async (r: { messages: BaseMessage[] }) => {
      sent = r.messages;
      return new AIMessage({ id: "a3", content: "done" });
    }) as never);
    expect(sent.map((m) => m.id ?? m.name)).toEqual(["summary", "q2", "a2", "t1"]);
    expect(sent[0].name).toBe("summary");
    const update = (result as unknown as { update: { messages: BaseMessage[]; summary_text: string } }).update;
    expect(update.summary_text).toBe("S");
    expect(update.messages.slice(1).map((m) => m.id)).toEqual(["q2", "a2", "t1", "a3"]);
  });

  it("triggers on tokens (counting the previous summary) and never without a trigger", () => {
    const mw = new SummarizationMiddleware({ model: new FakeChatModel(), trigger: { type: "tokens", value: 50 } });
    expect(mw.shouldSummarize([new HumanMessage("short")], null)).toBe(false);
    expect(mw.shouldSummarize([new HumanMessage("short")], "s".repeat(400))).toBe(true);
    expect(new SummarizationMiddleware({ model: new FakeChatModel() }).shouldSummarize(Array(100).fill(new HumanMessage("x")), null)).toBe(false);
  });

  it("is built by the app-layer factory only when enabled and a model exists", () => {
    expect(createSummarizationMiddleware({ enabled: false }, new FakeChatModel())).toBeNull();
    expect(createSummarizationMiddleware({ enabled: true }, null)).toBeNull();
    expect(createSummarizationMiddleware({ enabled: true, trigger: { type: "messages", value: 10 } }, new FakeChatModel())).toBeInstanceOf(SummarizationMiddleware);
  });
});
