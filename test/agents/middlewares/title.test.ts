import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { fallbackTitle, shouldGenerateTitle, TitleMiddleware } from "../../../src/agents/middlewares/title.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

type Out = { messages: BaseMessage[]; title: string | null };
const reminder = () => new HumanMessage({ content: "<system-reminder>date</system-reminder>", additional_kwargs: { dynamic_context_reminder: true, hide_from_ui: true } });

describe("TitleMiddleware gating and fallback (agent-factory.md §6.8, AF-057)", () => {
  it("titles a first exchange from the user's message without a title model (AF-057a)", async () => {
    const title = await new TitleMiddleware({ max_chars: 20 }).generateTitle([new HumanMessage("请帮我写测试"), new AIMessage("好的")]);
    expect(title).toBe("请帮我写测试");
  });

  it("titles from what the user typed, not the attached-files block the uploads middleware prepended", async () => {
    const withUploads = new HumanMessage({ content: "<current_uploads>\n- notes.txt\n</current_uploads>\n\nSummarise my notes", additional_kwargs: { original_user_content: "Summarise my notes" } });
    expect(await new TitleMiddleware({ max_chars: 40 }).generateTitle([withUploads, new AIMessage("ok")])).toBe("Summarise my notes");
  });

  it("does not title after a second user turn, or when a title exists (AF-057b,c)", async () => {
    expect(shouldGenerateTitle([new HumanMessage("a"), new AIMessage("b"), new HumanMessage("c"), new AIMessage("d")])).toBe(false);
    const mw = new TitleMiddleware();
    const handler = async () => new AIMessage("reply");
    const state = { messages: [new HumanMessage("hi")], title: "Existing" };
    expect(AIMessage.isInstance(await mw.wrapModelCall({ messages: state.messages, state } as never, handler as never))).toBe(true);
    const disabled = new TitleMiddleware({ enabled: false });
    expect(AIMessage.isInstance(await disabled.wrapModelCall({ messages: state.messages, state: { messages: state.messages } } as never, handler as never))).toBe(true);
  });

  it("shortens long messages to 50 chars + '...' and never exceeds max_chars (AF-057d,e)", () => {
    expect(fallbackTitle("x".repeat(200), 60)).toBe(`${"x".repeat(50)}...`);
    const short = fallbackTitle("x".repeat(200), 10);
    expect(short.length).toBeLessThanOrEqual(10);
    expect(short.endsWith("...")).toBe(true);
    expect(fallbackTitle("   ")).toBe("New Conversation");
  });

  it("does not count a leading dynamic-context reminder as a user turn (AF-057)", () => {
    expect(shouldGenerateTitle([reminder(), new HumanMessage("hello"), new AIMessage("hi")])).toBe(true);
  });
});

describe("TitleMiddleware inside an agent", () => {
  it("writes the title after the first exchange and keeps it afterwards, adding no graph node", async () => {
    const agent = createDeerflowAgent(new FakeChatModel(["first reply", "second reply"]), null, { features: { sandbox: false, autoTitle: true }, checkpointer: new MemorySaver() });
    const nodes = Object.keys((agent as unknown as { graph: { nodes: Record<string, unknown> } }).graph.nodes);
    expect(nodes.filter((n) => n.startsWith("TitleMiddleware"))).toEqual([]);
    const cfg = { configurable: { thread_id: "t-title" } };
    const first = (await agent.invoke({ messages: [new HumanMessage("Plan a trip to Kyoto")] } as never, cfg as never)) as unknown as Out;
    expect(first.title).toBe("Plan a trip to Kyoto");
    expect(first.messages.map((m) => m.content)).toEqual(["Plan a trip to Kyoto", "first reply"]);
    const second = (await agent.invoke({ messages: [new HumanMessage("Now Osaka")] } as never, cfg as never)) as unknown as Out;
    expect(second.title).toBe("Plan a trip to Kyoto");
  });

  it("uses the title model, cleaned up, and streams the title as a state update", async () => {
    const titleModel = new FakeChatModel(['<think>hmm</think>"Kyoto Trip Plan"']);
    const agent = createDeerflowAgent(new FakeChatModel(["reply"]), null, {
      features: { sandbox: false, autoTitle: new TitleMiddleware({ model: titleModel }) },
    });
    const updates: Record<string, unknown>[] = [];
    const streamed: string[] = [];
    for await (const [mode, chunk] of (await agent.stream({ messages: [new HumanMessage("Plan a trip to Kyoto")] } as never, { streamMode: ["updates", "messages"] } as never)) as AsyncIterable<[string, unknown]>) {
      if (mode === "updates") updates.push(chunk as Record<string, unknown>);
      else streamed.push(String((chunk as [BaseMessage])[0].content));
    }
    expect(streamed).toEqual(["reply"]);
    const modelUpdate = updates.find((u) => "model_request" in u)!.model_request as { title?: string } | { title?: string }[];
    const titles = (Array.isArray(modelUpdate) ? modelUpdate : [modelUpdate]).map((u) => u.title).filter(Boolean);
    expect(titles).toEqual(["Kyoto Trip Plan"]);
    expect(String(titleModel.calls[0][0].content)).toContain("max 6 words");
  });

  it("falls back to the user's message when the title model fails", async () => {
    const agent = createDeerflowAgent(new FakeChatModel(["reply"]), null, {
      features: { sandbox: false, autoTitle: new TitleMiddleware({ model: new FakeChatModel([new Error("title model down")]) }) },
    });
    const out = (await agent.invoke({ messages: [new HumanMessage("Summarize the quarterly report for the board meeting next week please")] } as never)) as unknown as Out;
    expect(out.title).toBe("Summarize the quarterly report for the board meeti...");
    expect(out.messages.at(-1)!.content).toBe("reply");
  });
});
