import { ToolMessage } from "@langchain/core/messages";
import { GraphInterrupt } from "@langchain/langgraph";
import { describe, expect, it, vi } from "vitest";
import { describeToolError, isControlFlowError, ToolErrorHandlingMiddleware } from "../../../src/agents/middlewares/tool-error-handling.js";

type Req = Parameters<ToolErrorHandlingMiddleware["wrapToolCall"]>[0];
type Handler = Parameters<ToolErrorHandlingMiddleware["wrapToolCall"]>[1];
class RuntimeError extends Error {}

const request = (name: string, id?: string, signal?: AbortSignal) =>
  ({ toolCall: { name, args: {}, id, type: "tool_call" }, runtime: { context: {}, signal }, state: { messages: [] } }) as unknown as Req;
const failing = (err: unknown) => (async () => {
  throw err;
}) as unknown as Handler;
const wrap = (req: Req, handler: Handler) => new ToolErrorHandlingMiddleware().wrapToolCall(req, handler) as Promise<ToolMessage>;

describe("ToolErrorHandlingMiddleware (agent-factory.md §6.5, AF-056)", () => {
  it("turns a tool exception into an error ToolMessage the model can read", async () => {
    const out = await wrap(request("web_search", "tc-42"), failing(new RuntimeError("network down")));
    expect(ToolMessage.isInstance(out)).toBe(true);
    expect(out.tool_call_id).toBe("tc-42");
    expect(out.name).toBe("web_search");
    expect(out.status).toBe("error");
    expect(out.content).toBe("Error: Tool 'web_search' failed with RuntimeError: network down. Continue with available context, or choose an alternative tool.");
  });

  it("uses the subagent-failure format for the task tool and stamps subagent_status failed", async () => {
    const out = await wrap(request("task", "tc-task"), failing(new RuntimeError("network down")));
    expect(out.content).toBe("Task failed. Error: RuntimeError: network down. Continue with available context, or choose an alternative tool.");
    expect(out.additional_kwargs.subagent_status).toBe("failed");
  });

  it("falls back to missing_tool_call_id and unknown_tool", async () => {
    const out = await wrap(request("", undefined), failing(new TypeError("bad")));
    expect(out.tool_call_id).toBe("missing_tool_call_id");
    expect(out.name).toBe("unknown_tool");
    expect(out.content).toContain("Tool 'unknown_tool' failed with TypeError: bad");
  });

  it("re-raises a graph interrupt", async () => {
    const interrupt = new GraphInterrupt([]);
    await expect(wrap(request("web_search", "i1"), failing(interrupt))).rejects.toBe(interrupt);
  });

  it("re-raises when the run was aborted", async () => {
    const ac = new AbortController();
    ac.abort();
    const err = new Error("whatever");
    await expect(wrap(request("web_search", "a1", ac.signal), failing(err))).rejects.toBe(err);
    const abortErr = Object.assign(new Error("stop"), { name: "AbortError" });
    await expect(wrap(request("web_search", "a2"), failing(abortErr))).rejects.toBe(abortErr);
  });

  it("returns the handler's result untouched on success", async () => {
    const ok = new ToolMessage({ content: "ok", tool_call_id: "s1", name: "t" });
    const handler = vi.fn(async () => ok);
    expect(await wrap(request("t", "s1"), handler as unknown as Handler)).toBe(ok);
  });
});

describe("describeToolError", () => {
  it("cuts a detail over 500 characters to 497 plus '...'", () => {
    const { detail } = describeToolError(new Error("x".repeat(600)));
    expect(detail).toHaveLength(500);
    expect(detail).toBe(`${"x".repeat(497)}...`);
    expect(describeToolError(new Error("x".repeat(500))).detail).toBe("x".repeat(500));
  });

  it("uses the type name when the message is empty, and handles non-Error throws", () => {
    expect(describeToolError(new RuntimeError(""))).toEqual({ type: "RuntimeError", detail: "RuntimeError" });
    expect(describeToolError("plain")).toEqual({ type: "string", detail: "plain" });
  });
});

describe("isControlFlowError", () => {
  it("recognises interrupts and aborts but not ordinary errors", () => {
    expect(isControlFlowError(new GraphInterrupt([]))).toBe(true);
    expect(isControlFlowError(Object.assign(new Error("x"), { name: "AbortError" }))).toBe(true);
    expect(isControlFlowError(new Error("x"))).toBe(false);
  });
});

describe("tool errors never carry stack traces", () => {
  it("reports a schema violation of a real tool with the validation message only", async () => {
    const { ScriptedChatModel } = await import("../../../src/models/scripted-chat-model.js");
    const { createDeerflowAgent } = await import("../../../src/agents/factory.js");
    const { tool } = await import("langchain");
    const { z } = await import("zod");
    const { MemorySaver } = await import("@langchain/langgraph");
    const needsList = tool(async ({ items }) => items.join(","), { name: "needs_list", description: "d", schema: z.object({ items: z.array(z.string()) }) });
    const agent = createDeerflowAgent(new ScriptedChatModel(), [needsList], { features: { sandbox: false }, checkpointer: new MemorySaver() });
    const result = await agent.invoke({ messages: [{ role: "user", content: "!call needs_list {}" }] }, { configurable: { thread_id: "stack" } });
    const toolMessage = result.messages.find((m: { getType(): string }) => m.getType() === "tool");
    const text = String(toolMessage.content);
    expect(text).toContain("Error: Tool 'needs_list' failed with");
    expect(text).toContain("expected array");
    expect(text).not.toMatch(/\n\s+at\s/);
    expect(text).not.toContain("node_modules");
  });
});
