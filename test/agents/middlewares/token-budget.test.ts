import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { TokenBudgetMiddleware } from "../../../src/agents/middlewares/token-budget.js";
import { resolveRunScope } from "../../../src/agents/middlewares/run-scope.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const RUNTIME = { context: { thread_id: "t", run_id: "r" } };
const usage = (input: number, output: number, extra: Partial<ConstructorParameters<typeof AIMessage>[0] & object> = {}) =>
  new AIMessage({ content: "", usage_metadata: { input_tokens: input, output_tokens: output, total_tokens: input + output }, ...extra });

/** One model call through the middleware; returns what the model was sent and what came back. */
async function turn(mw: TokenBudgetMiddleware, response: AIMessage, runtime: Record<string, unknown> = RUNTIME) {
  let sent: BaseMessage[] = [];
  const result = (await mw.wrapModelCall({ messages: [new HumanMessage("go")], runtime } as never, (async (r: { messages: BaseMessage[] }) => {
    sent = r.messages;
    return response;
  }) as never)) as unknown as AIMessage;
  return { sent, result };
}

describe("TokenBudgetMiddleware (agent-factory.md §6.13, AF-059)", () => {
  it("queues one warning at 80% and injects it as budget_warning at the next call (AF-059a,b)", async () => {
    const mw = new TokenBudgetMiddleware({ enabled: true, max_tokens: 100_000 });
    const first = usage(80_000, 5_000);
    expect((await turn(mw, first)).result).toBe(first);
    const { sent } = await turn(mw, usage(2_500, 2_500));
    const warning = sent.at(-1)!;
    expect(warning.name).toBe("budget_warning");
    expect(String(warning.content)).toContain("[TOKEN BUDGET WARNING] You have used 85,000 of your 100,000 total token budget (85%)");
    expect((await turn(mw, usage(1, 1))).sent.some((m) => m.name === "budget_warning")).toBe(false);
  });

  it("strips tool calls and stops at the hard limit, keeping the text; token_capped is consumed once (AF-059c)", async () => {
    const mw = new TokenBudgetMiddleware({ enabled: true, max_tokens: 100_000 });
    const context: Record<string, unknown> = { thread_id: "t", run_id: "r" };
    const response = usage(100_000, 5_000, { content: "Thinking", tool_calls: [{ name: "bash", args: {}, id: "c1", type: "tool_call" }] });
    const run = { context };
    const { result } = await turn(mw, response, run);
    expect(result.tool_calls).toEqual([]);
    expect(String(result.content)).toContain("Thinking");
    expect(String(result.content)).toContain("[TOKEN BUDGET EXCEEDED] The total token usage (105,000) has exceeded the safety limit (100,000)");
    expect(context.stop_reason).toBe("token_capped");
    expect(mw.consumeStopReason(resolveRunScope(run))).toBe("token_capped");
    expect(mw.consumeStopReason(resolveRunScope(run))).toBeNull();
  });

  it("applies a separate output limit (AF-059d)", async () => {
    const mw = new TokenBudgetMiddleware({ enabled: true, max_tokens: 100_000, max_output_tokens: 5_000 });
    expect(String((await turn(mw, usage(1_000, 6_000))).result.content)).toContain("The output token usage (6,000)");
  });

  it("is inert when disabled (the default) and counts each run separately", async () => {
    const inert = new TokenBudgetMiddleware();
    const big = usage(10_000_000, 1);
    expect((await turn(inert, big)).result).toBe(big);
    const mw = new TokenBudgetMiddleware({ enabled: true, max_tokens: 100_000 });
    await turn(mw, usage(90_000, 0));
    const other = await turn(mw, usage(20_000, 0), { context: { thread_id: "t", run_id: "r2" } });
    expect(other.sent.some((m) => m.name === "budget_warning")).toBe(false);
    expect(other.result.tool_calls ?? []).toEqual([]);
    expect(String(other.result.content)).not.toContain("EXCEEDED");
  });
});

describe("TokenBudgetMiddleware inside an agent", () => {
  it("warns, then stops a run whose usage keeps growing", async () => {
    const bash = tool(async () => "out", { name: "bash", description: "run", schema: z.object({}) });
    const call = (n: number) => ({ tool_calls: [{ name: "bash", args: { n } }], usage: { input_tokens: 45_000, output_tokens: 0 } });
    const model = new FakeChatModel([call(1), call(2), call(3), "never reached"]);
    const agent = createDeerflowAgent(model, [bash], {
      features: { sandbox: false, tokenBudget: new TokenBudgetMiddleware({ enabled: true, max_tokens: 100_000 }) },
      checkpointer: new MemorySaver(),
    });
    const out = (await agent.invoke({ messages: [new HumanMessage("work")] } as never, { configurable: { thread_id: "t-b" }, recursionLimit: 50 } as never)) as unknown as {
      messages: BaseMessage[];
    };
    expect(model.calls).toHaveLength(3);
    expect(model.calls[2].at(-1)!.name).toBe("budget_warning");
    const last = out.messages.at(-1) as AIMessage;
    expect(last.tool_calls).toEqual([]);
    expect(String(last.content)).toContain("TOKEN BUDGET EXCEEDED");
  });
});
