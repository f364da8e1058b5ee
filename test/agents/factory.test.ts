import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { tool, type AgentMiddleware, type ModelRequest } from "langchain";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createDeerflowAgent, type DeerflowAgent } from "../../src/agents/factory.js";
import { Next, RuntimeFeatures } from "../../src/agents/features.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { DanglingToolCallMiddleware } from "../../src/agents/middlewares/dangling-tool-call.js";
import type { MemoryMiddleware } from "../../src/agents/middlewares/memory.js";
import type { DeerMemManager } from "../../src/agents/memory/deermem-manager.js";
import { SummarizationMiddleware } from "../../src/agents/middlewares/summarization.js";
import { ThreadState } from "../../src/agents/thread-state.js";
import { DeerflowError } from "../../src/errors.js";
import { ScriptedChatModel } from "../../src/models/scripted-chat-model.js";

type Built = { options: { model: unknown; middleware?: AgentMiddleware[]; tools?: { name: string }[]; systemPrompt?: unknown; stateSchema?: unknown; name?: string } };
const opts = (agent: DeerflowAgent) => (agent as unknown as Built).options;
const mwNames = (agent: DeerflowAgent) => (opts(agent).middleware ?? []).map((m) => m.name);
const toolNames = (agent: DeerflowAgent) => (opts(agent).tools ?? []).map((t) => t.name);

class Passthrough extends DeerflowMiddleware {
  name = "Passthrough";
  wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
    return h(req) as never;
  }
}

const boom = tool(
  async () => {
    throw new Error("kaput");
  },
  { name: "boom", description: "always fails", schema: z.object({}) },
);

async function run(agent: DeerflowAgent, text: string, threadId = "t-1", context: Record<string, unknown> = {}) {
  const out = await agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: threadId }, context } as never);
  return out as unknown as { messages: BaseMessage[]; thread_data?: Record<string, string> };
}

describe("createDeerflowAgent: construction (agent-factory.md §1, group A)", () => {
  it("passes the model through, no system prompt, ThreadState as the schema and name 'default' (AF-001)", () => {
    const model = new ScriptedChatModel({});
    const agent = createDeerflowAgent(model);
    expect(opts(agent).model).toBe(model);
    expect(opts(agent).systemPrompt).toBeUndefined();
    expect(opts(agent).stateSchema).toBe(ThreadState);
    expect(opts(agent).name).toBe("default");
  });

  it("builds the default chain and injects ask_clarification (AF-002)", () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: false } });
    expect(mwNames(agent)).toEqual(["DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware", "LoopDetectionMiddleware", "ClarificationMiddleware"]);
    expect(toolNames(agent)).toEqual(["ask_clarification"]);
    expect(mwNames(createDeerflowAgent(new ScriptedChatModel({})))).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware",
      "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
  });

  it("rejects middleware together with features (AF-004a)", () => {
    expect(() => createDeerflowAgent(new ScriptedChatModel({}), null, { middleware: [new Passthrough()], features: new RuntimeFeatures() })).toThrow(
      "Cannot specify both 'middleware' and 'features'",
    );
  });

  it("rejects middleware together with a non-empty extraMiddleware, but tolerates an empty one (AF-004b)", () => {
    expect(() => createDeerflowAgent(new ScriptedChatModel({}), null, { middleware: [new Passthrough()], extraMiddleware: [new Passthrough()] })).toThrow(
      "full takeover",
    );
    expect(() => createDeerflowAgent(new ScriptedChatModel({}), null, { middleware: [new Passthrough()], extraMiddleware: [] })).not.toThrow();
  });

  it("uses a full-takeover chain verbatim, with no tool injection and no Clarification tail (AF-005)", () => {
    const custom = new Passthrough();
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { middleware: [custom] });
    expect(opts(agent).middleware).toEqual([custom]);
    expect(opts(agent).tools ?? []).toEqual([]);
  });

  it("rejects an extra that is not a middleware with a TypeError naming its type (AF-006a)", () => {
    const create = (extra: unknown) => () => createDeerflowAgent(new ScriptedChatModel({}), null, { extraMiddleware: [extra as AgentMiddleware] });
    expect(create({})).toThrow(TypeError);
    expect(create({})).toThrow("extra_middleware items must be AgentMiddleware instances, got Object");
    expect(create(new Date())).toThrow("got Date");
    expect(create("x")).toThrow("got string");
    expect(create(null)).toThrow("got null");
  });

  it("lets a user tool win over a feature tool of the same name and keeps it first (AF-010)", () => {
    const mine = tool(async () => "mine", { name: "ask_clarification", description: "mine", schema: z.object({}) });
    const agent = createDeerflowAgent(new ScriptedChatModel({}), [mine], { features: { sandbox: false } });
    expect(toolNames(agent)).toEqual(["ask_clarification"]);
    expect(opts(agent).tools?.[0]).toBe(mine);
  });

  it("appends feature tools after the user's tools", () => {
    expect(toolNames(createDeerflowAgent(new ScriptedChatModel({}), [boom], { features: { sandbox: false } }))).toEqual(["boom", "ask_clarification"]);
  });

  it("places decorated extras and keeps Clarification last (AF-015, AF-020)", () => {
    @Next(DanglingToolCallMiddleware)
    class AfterDangling extends Passthrough {
      override name = "AfterDangling";
    }
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: false }, extraMiddleware: [new Passthrough(), new AfterDangling()] });
    expect(mwNames(agent)).toEqual([
      "DanglingToolCallMiddleware", "AfterDangling", "ToolErrorHandlingMiddleware", "LoopDetectionMiddleware", "Passthrough", "ClarificationMiddleware",
    ]);
  });

  it("builds the full chain and tool list with every feature on (AF-003)", () => {
    class MyGuardrail extends Passthrough {
      override name = "MyGuardrail";
    }
    class MySummarization extends Passthrough {
      override name = "MySummarization";
    }
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, {
      features: { sandbox: true, memory: true, summarization: new MySummarization(), subagent: true, vision: true, autoTitle: true, guardrail: new MyGuardrail() },
      planMode: true,
    });
    expect(mwNames(agent)).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "MyGuardrail", "ToolErrorHandlingMiddleware",
      "MySummarization", "TodoMiddleware", "TitleMiddleware", "MemoryMiddleware", "ViewImageMiddleware", "SubagentLimitMiddleware",
      "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
    expect(toolNames(agent)).toEqual(["view_image", "task", "ask_clarification"]);
  });

  it("drops the whole sandbox group when off, and puts a replacement first (AF-011)", () => {
    const off = mwNames(createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: false } }));
    const custom = new Passthrough();
    const replaced = createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: custom } });
    for (const chain of [off, mwNames(replaced)]) {
      for (const n of ["ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware"]) expect(chain).not.toContain(n);
    }
    expect(opts(replaced).middleware?.[0]).toBe(custom);
  });

  it("rejects summarization=true with a validation error (AF-007a)", () => {
    expect(() => createDeerflowAgent(new ScriptedChatModel({}), null, { features: { summarization: true as never } })).toThrow(DeerflowError);
  });
});

describe("createDeerflowAgent: running the built agent", () => {
  it("ends the turn with the formatted question when the model calls ask_clarification", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    const out = await run(agent, '!call ask_clarification {"question":"Which city?"}');
    const last = out.messages.at(-1)!;
    expect(ToolMessage.isInstance(last)).toBe(true);
    expect((last as ToolMessage).name).toBe("ask_clarification");
    expect(String(last.content)).toContain("Which city?");
    expect(String(last.content)).toBe("❓ Which city?");
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai", "tool"]);
  });

  it("stamps the human message and records thread_data through the sandbox group", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { checkpointer: new MemorySaver() });
    const out = await run(agent, "hello", "thread-42");
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai"]);
    expect(out.messages[0].name).toBe("user-input");
    expect(out.messages[1].content).toBe("You said: hello");
    expect(out.thread_data?.workspace_path).toBe("/mnt/user-data/workspace");
  });

  it("turns a failing tool into an error ToolMessage and continues to a final answer", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), [boom], { features: { sandbox: false }, checkpointer: new MemorySaver() });
    const out = await run(agent, "!call boom {}");
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai", "tool", "ai"]);
    const toolMsg = out.messages[2] as ToolMessage;
    expect(toolMsg.status).toBe("error");
    expect(toolMsg.content).toBe("Error: Tool 'boom' failed with Error: kaput. Continue with available context, or choose an alternative tool.");
    expect(String(out.messages[3].content)).toContain("Tool boom returned: Error: Tool 'boom' failed");
  });

  it("lets the model proceed when clarification is disabled in the context", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: false }, checkpointer: new MemorySaver() });
    const out = await run(agent, '!call ask_clarification {"question":"Which city?"}', "t-2", { disable_clarification: true });
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai", "tool", "ai"]);
    expect(String(out.messages[2].content)).toContain("disabled");
    expect(AIMessage.isInstance(out.messages[3])).toBe(true);
  });

  it("binds no injected tools in full takeover, so the model cannot call ask_clarification", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { middleware: [new Passthrough()], checkpointer: new MemorySaver() });
    const out = await run(agent, '!call ask_clarification {"question":"Which city?"}');
    expect(out.messages.at(-1)?.content).toBe("Tool 'ask_clarification' is not available. Bound tools: (none).");
  });

  it("runs an unanchored extra middleware on every model call", async () => {
    const seen: number[] = [];
    class Recorder extends DeerflowMiddleware {
      name = "Recorder";
      wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
        seen.push(req.messages.length);
        return h(req) as never;
      }
    }
    const agent = createDeerflowAgent(new ScriptedChatModel({}), [boom], { features: { sandbox: false }, extraMiddleware: [new Recorder()] });
    await run(agent, "!call boom {}");
    expect(seen).toEqual([1, 3]);
  });

  it("keeps conversation state per thread with a checkpointer", async () => {
    const agent = createDeerflowAgent(new ScriptedChatModel({}), null, { features: { sandbox: false }, checkpointer: new MemorySaver() });
    await run(agent, "first", "tA");
    const out = await run(agent, "second", "tA");
    expect(out.messages.map((m) => m.content)).toEqual(["first", "You said: first", "second", "You said: second"]);
    expect((await run(agent, "other", "tB")).messages).toHaveLength(2);
  });
});

describe("createDeerflowAgent: every feature on, one real run", () => {
  it("streams the answer, titles the thread, records thread data and queues memory, with no graph node beyond the model and the tools", async () => {
    const home = mkdtempSync(path.join(tmpdir(), "full-chain-"));
    process.env.DEER_FLOW_HOME = home;
    try {
      class MyGuardrail extends Passthrough {
        override name = "MyGuardrail";
      }
      const model = new ScriptedChatModel({});
      const agent = createDeerflowAgent(model, [boom], {
        features: {
          memory: true, summarization: new SummarizationMiddleware({ model }), subagent: true, vision: true, autoTitle: true,
          guardrail: new MyGuardrail(), tokenBudget: true,
        },
        planMode: true,
        checkpointer: new MemorySaver(),
      });
      const nodes = Object.keys((agent as unknown as { graph: { nodes: Record<string, unknown> } }).graph.nodes).filter((n) => n !== "__start__");
      expect(nodes).toEqual(["model_request", "tools"]);
      const tokens: string[] = [];
      let final: Record<string, unknown> = {};
      const config = { configurable: { thread_id: "t-full" }, context: { thread_id: "t-full", run_id: "run-1", user_id: "u1" }, streamMode: ["messages", "values"] };
      for await (const [mode, chunk] of (await agent.stream({ messages: [new HumanMessage("hello full chain")] } as never, config as never)) as AsyncIterable<[string, unknown]>) {
        if (mode === "messages") tokens.push(String((chunk as [BaseMessage])[0].content));
        else final = chunk as Record<string, unknown>;
      }
      expect(tokens.join("")).toBe("You said: hello full chain");
      expect(final.title).toBe("hello full chain");
      expect((final.thread_data as Record<string, string>).uploads_path).toBe("/mnt/user-data/uploads");
      expect(final.uploaded_files).toEqual([]);
      expect((final.messages as BaseMessage[]).map((m) => m.getType())).toEqual(["human", "ai"]);
      const memory = (opts(agent).middleware ?? []).find((m) => m.name === "MemoryMiddleware") as unknown as MemoryMiddleware;
      const manager = memory.managerFor({ context: {} }) as DeerMemManager;
      expect(manager.pending).toBeGreaterThan(0);
      await manager.forget({ userId: "u1", agentName: "default" });

      const out = await run(agent, "!call boom {}", "t-full", { thread_id: "t-full", run_id: "run-2", user_id: "u1" });
      expect(out.messages.slice(-3).map((m) => m.getType())).toEqual(["ai", "tool", "ai"]);
      expect(String(out.messages.at(-2)!.content)).toContain("Tool 'boom' failed");
      await manager.forget({ userId: "u1", agentName: "default" });
    } finally {
      delete process.env.DEER_FLOW_HOME;
      rmSync(home, { recursive: true, force: true });
    }
  });
});
