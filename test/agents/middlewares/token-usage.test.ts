import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { isCommand } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { attributeTokenUsage, foldSubagentUsage, TokenUsageMiddleware } from "../../../src/agents/middlewares/token-usage.js";
import { captureLogs } from "../../support/capture-logs.js";

const tc = (name: string, id: string) => ({ name, args: {}, id, type: "tool_call" as const });
const usage = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

describe("TokenUsageMiddleware (agent-factory.md §6.16)", () => {
  it("attributes a response by what it does", () => {
    expect(attributeTokenUsage(new AIMessage("final")).kind).toBe("final_answer");
    expect(attributeTokenUsage(new AIMessage("")).kind).toBe("thinking");
    expect(attributeTokenUsage(new AIMessage({ content: "", tool_calls: [tc("write_todos", "a")] })).kind).toBe("todo_update");
    const mixed = attributeTokenUsage(new AIMessage({ content: "", tool_calls: [tc("task", "t1"), tc("web_search", "w1"), tc("present_files", "p1")] }));
    expect(mixed).toMatchObject({ version: 1, kind: "subagent_dispatch", shared_attribution: true, tool_call_ids: ["t1", "w1", "p1"] });
    expect(mixed.actions.map((a) => a.kind)).toEqual(["subagent", "search", "present_files"]);
    expect(attributeTokenUsage(new AIMessage({ content: "", tool_calls: [tc("bash", "b")] })).kind).toBe("tool_batch");
  });

  it("logs the usage and stamps the attribution on the response", async () => {
    const logs = captureLogs();
    try {
      const response = new AIMessage({ content: "hi", usage_metadata: usage });
      const out = await new TokenUsageMiddleware().wrapModelCall({ messages: [new HumanMessage("q")] } as never, (async () => response) as never);
      expect(out).toBe(response);
      expect(response.additional_kwargs.token_usage_attribution).toMatchObject({ kind: "final_answer" });
      expect(logs.messages()).toContain("LLM token usage: input=10 output=5 total=15");
    } finally {
      logs.restore();
    }
  });

  it("folds subagent usage from task results into the dispatching message once", async () => {
    const dispatch = new AIMessage({ id: "ai-1", content: "", tool_calls: [tc("task", "t1"), tc("task", "t2")], usage_metadata: usage });
    const r1 = new ToolMessage({ id: "tm-1", content: "Task Succeeded. Result: a", tool_call_id: "t1", name: "task", additional_kwargs: { subagent_usage: { input_tokens: 100, output_tokens: 20, total_tokens: 120 } } });
    const r2 = new ToolMessage({ id: "tm-2", content: "Task Succeeded. Result: b", tool_call_id: "t2", name: "task", additional_kwargs: { subagent_usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } } });
    const history: BaseMessage[] = [new HumanMessage("q"), dispatch, r1, r2];
    const folded = foldSubagentUsage(history)!;
    expect(folded[0].id).toBe("ai-1");
    expect((folded[0] as AIMessage).usage_metadata).toMatchObject({ input_tokens: 111, output_tokens: 27, total_tokens: 138 });
    expect(folded.slice(1).every((m) => m.additional_kwargs.subagent_usage_attributed)).toBe(true);
    expect(foldSubagentUsage([new HumanMessage("q"), dispatch, ...folded.slice(1)])).toBeNull();
    const result = await new TokenUsageMiddleware().wrapModelCall({ messages: history, state: { messages: history } } as never, (async () => new AIMessage("done")) as never);
    expect(isCommand(result)).toBe(true);
  });
});
