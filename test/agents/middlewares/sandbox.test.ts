import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, isCommand, MemorySaver } from "@langchain/langgraph";
import { tool } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { SandboxMiddleware } from "../../../src/agents/middlewares/sandbox.js";
import { ensureSandbox, type SandboxProvider } from "../../../src/sandbox/provider.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const call = { name: "bash", args: {}, id: "tc-1", type: "tool_call" as const };
const ok = () => new ToolMessage({ content: "ok", tool_call_id: "tc-1", name: "bash" });
const request = (state: Record<string, unknown>, context?: Record<string, unknown>) => ({ toolCall: call, tool: undefined, state, runtime: { context } }) as never;

/** A provider that counts acquisitions and releases. */
class CountingProvider implements SandboxProvider {
  acquired: string[] = [];
  released: string[] = [];
  acquire(threadId: string) {
    this.acquired.push(threadId);
    return `sb-${threadId}`;
  }
  release(id: string) {
    this.released.push(id);
  }
}

describe("SandboxMiddleware.wrapToolCall (agent-factory.md §6.3, AF-054)", () => {
  it("turns the result into a state update when the tool acquired a sandbox (AF-054a)", async () => {
    const mw = new SandboxMiddleware();
    const state: Record<string, unknown> = { messages: [] };
    const result = ok();
    const out = await mw.wrapToolCall(request(state), (async (req: { state: Record<string, unknown> }) => {
      req.state.sandbox = { sandbox_id: "new-sandbox" };
      return result;
    }) as never);
    expect(isCommand(out)).toBe(true);
    const update = (out as Command).update as Record<string, unknown>;
    expect(update.sandbox).toEqual({ sandbox_id: "new-sandbox" });
    expect(update.messages).toEqual([result]);
  });

  it("passes the handler's result through unchanged when the sandbox was already known (AF-054b)", async () => {
    const mw = new SandboxMiddleware();
    const result = ok();
    const out = await mw.wrapToolCall(request({ messages: [], sandbox: { sandbox_id: "existing" } }), (async () => result) as never);
    expect(out).toBe(result);
    const viaContext = await mw.wrapToolCall(request({ messages: [] }, { sandbox_id: "existing" }), (async () => result) as never);
    expect(viaContext).toBe(result);
  });

  it("adds sandbox to a Command's update, keeping its other fields, and notices acquisitions recorded in the context", async () => {
    const mw = new SandboxMiddleware();
    const context: Record<string, unknown> = {};
    const out = await mw.wrapToolCall(request({ messages: [] }, context), (async () => {
      context.sandbox_id = "ctx-sb";
      return new Command({ update: { messages: [ok()], artifacts: ["/a"] } });
    }) as never);
    expect((out as Command).update).toMatchObject({ sandbox: { sandbox_id: "ctx-sb" }, artifacts: ["/a"] });
  });

  it("adds no graph node without a provider (lazy), and before/after agent hooks only with one", () => {
    expect(new SandboxMiddleware().beforeAgent).toBeUndefined();
    expect(new SandboxMiddleware().afterAgent).toBeUndefined();
    const provider = new CountingProvider();
    expect(new SandboxMiddleware({ provider }).beforeAgent).toBeUndefined();
    expect(new SandboxMiddleware({ provider }).afterAgent).toBeTypeOf("function");
    expect(new SandboxMiddleware({ provider, lazyInit: false }).beforeAgent).toBeTypeOf("function");
  });
});

describe("ensureSandbox", () => {
  it("acquires once, records the id in state and context, and reuses it", async () => {
    const provider = new CountingProvider();
    const runtime = { state: {} as Record<string, unknown>, context: { thread_id: "t9" } as Record<string, unknown> };
    expect(await ensureSandbox(runtime, provider)).toBe("sb-t9");
    expect(await ensureSandbox(runtime, provider)).toBe("sb-t9");
    expect(provider.acquired).toEqual(["t9"]);
    expect(runtime.state.sandbox).toEqual({ sandbox_id: "sb-t9" });
    expect(runtime.context.sandbox_id).toBe("sb-t9");
    await expect(ensureSandbox({ state: {} }, provider)).rejects.toThrow("Thread ID is required");
  });
});

describe("SandboxMiddleware inside an agent", () => {
  const provider = new CountingProvider();
  const bash = tool(async ({ command }, config) => `ran ${command} in ${await ensureSandbox(config as never, provider)}`, {
    name: "bash", description: "run", schema: z.object({ command: z.string() }),
  });

  it("records the lazily acquired sandbox in state on the first tool call, then releases it after the run", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "bash", args: { command: "ls" } }] }, "done", { tool_calls: [{ name: "bash", args: { command: "pwd" } }] }, "done again"]);
    const agent = createDeerflowAgent(model, [bash], {
      features: { sandbox: new SandboxMiddleware({ provider }) },
      checkpointer: new MemorySaver(),
    });
    const config = (run: string) => ({ configurable: { thread_id: "t-sb" }, context: { thread_id: "t-sb", run_id: run } });
    const out = (await agent.invoke({ messages: [new HumanMessage("go")] } as never, config("r1") as never)) as unknown as { sandbox: unknown; messages: BaseMessage[] };
    expect(out.sandbox).toEqual({ sandbox_id: "sb-t-sb" });
    expect(String(out.messages[2].content)).toBe("ran ls in sb-t-sb");
    expect(provider.acquired).toEqual(["t-sb"]);
    expect(provider.released).toEqual(["sb-t-sb"]);
    const again = (await agent.invoke({ messages: [new HumanMessage("more")] } as never, config("r2") as never)) as unknown as { sandbox: unknown };
    expect(again.sandbox).toEqual({ sandbox_id: "sb-t-sb" });
    expect(provider.acquired).toEqual(["t-sb"]);
  });

  it("acquires before the agent when eager", async () => {
    const eager = new CountingProvider();
    const agent = createDeerflowAgent(new FakeChatModel(["hi"]), null, { features: { sandbox: new SandboxMiddleware({ provider: eager, lazyInit: false }) } });
    const out = (await agent.invoke({ messages: [new HumanMessage("go")] } as never, { context: { thread_id: "t-eager" } } as never)) as unknown as { sandbox: unknown };
    expect(out.sandbox).toEqual({ sandbox_id: "sb-t-eager" });
    expect(eager.released).toEqual(["sb-t-eager"]);
  });
});
