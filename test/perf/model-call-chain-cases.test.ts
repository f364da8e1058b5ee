// Every per-layer rule of langchain 1.5's wrapModelCall composition, run through langchain's own composition
// (`createAgent`) and through the gateway's fused layer pair (`createDeerflowAgent`): the log of what each member
// saw, the model's prompts, the `updates` chunks, the final state and the errors a caller gets must be the same.
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, MemorySaver, StateSchema, ReducedValue, interrupt, isGraphInterrupt } from "@langchain/langgraph";
import { createAgent, createMiddleware, type AgentMiddleware, type ModelRequest } from "langchain";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../src/agents/factory.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { ThreadStateFields } from "../../src/agents/thread-state.js";
import { FakeChatModel, type Reply } from "../support/fake-chat-model.js";

type Handler = (r: ModelRequest) => unknown;
const Schema = new StateSchema({
  ...ThreadStateFields,
  hits: new ReducedValue(z.array(z.string()).default(() => []), { inputSchema: z.array(z.string()), reducer: (a: string[], b: string[]) => [...a, ...b] }),
});
const textOf = (m: unknown) => (AIMessage.isInstance(m) ? String(m.content) : m && typeof m === "object" && "lg_name" in (m as object) ? "command" : typeof m);

function mw(name: string, fn: (req: ModelRequest, handler: Handler) => unknown, extra: Record<string, unknown> = {}): AgentMiddleware {
  const C = class extends DeerflowMiddleware {
    name = name;
    wrapModelCall(req: ModelRequest, handler: Handler) { return fn(req, handler) as never; }
  };
  const o = new C();
  Object.assign(o, extra);
  return o as unknown as AgentMiddleware;
}

const echo = tool(async ({ x }: { x: string }) => `echo:${x}`, { name: "echo", description: "echo", schema: z.object({ x: z.string() }) });
const other = tool(async () => "other", { name: "other", description: "other", schema: z.object({}) });

interface Scenario {
  make: (log: unknown[]) => AgentMiddleware[];
  replies?: Reply[];
  tools?: unknown[];
  turns?: unknown[];
}
function errInfo(e: unknown) {
  const out: unknown[] = [];
  for (let c = e as { name?: string; message?: string; cause?: unknown } | undefined; c; c = c.cause as typeof c) out.push([c.name, c.message]);
  return { interrupt: isGraphInterrupt(e), chain: out };
}
async function observe(fused: boolean, s: Scenario) {
  const log: unknown[] = [];
  const middleware = s.make(log);
  const model = new FakeChatModel([...(s.replies ?? [])], "done");
  const checkpointer = new MemorySaver();
  const agent: any = fused
    ? createDeerflowAgent(model as never, (s.tools ?? null) as never, { middleware, systemPrompt: "base", stateSchema: Schema, checkpointer })
    : createAgent({ model: model as never, tools: s.tools as never, middleware: middleware as never, stateSchema: Schema as never, systemPrompt: "base", name: "default", checkpointer });
  const updates: unknown[] = [];
  let values: any = {};
  const errors: unknown[] = [];
  const turns = s.turns ?? [{ messages: [new HumanMessage({ content: "hi", id: "h-1" })] }];
  for (const input of turns) {
    try {
      const stream = await agent.stream(input, { streamMode: ["updates", "values"], configurable: { thread_id: "t" } });
      for await (const [mode, chunk] of stream) {
        // Model message ids, task ids and interrupt ids are random per run: compared as a placeholder.
        if (mode === "updates") updates.push(JSON.parse(JSON.stringify(chunk, (k, v) => (k === "id" && typeof v === "string" && (v.startsWith("run-") || /^[0-9a-f-]{36}$/.test(v) || /^[0-9a-f]{32}$/.test(v)) ? "<id>" : v))));
        else values = chunk;
      }
    } catch (e) {
      errors.push(errInfo(e));
    }
  }
  const prompts = model.calls.map((c) => c.map((m) => `${m.getType()}:${typeof m.content === "string" ? m.content : JSON.stringify(m.content)}`));
  const messages = ((values.messages ?? []) as BaseMessage[]).map((m) => [m.getType(), m.content, m.name ?? null]);
  return { log, prompts, updates, hits: values.hits, title: values.title, messages, errors };
}
async function compare(s: Scenario) {
  const ref = await observe(false, s);
  const fus = await observe(true, s);
  return { ref, fus };
}

const cases: Record<string, Scenario> = {
  retry: {
    replies: [new Error("boom"), "second"],
    make: (log) => [
      mw("Outer", async (r, h) => { const res = await h(r); log.push(["Outer", textOf(res)]); return res; }),
      mw("Retry", async (r, h) => { try { return await h(r); } catch (e) { log.push(["retry after", (e as Error).message]); return await h({ ...r, systemPrompt: r.systemPrompt + " retry" }); } }),
      mw("Prompt", async (r, h) => h({ ...r, systemPrompt: r.systemPrompt + " +P" })),
    ],
  },
  retryCommands: {
    replies: ["a", "b"],
    make: (log) => [
      mw("Twice", async (r, h) => { await h(r); const res = await h(r); log.push(["Twice", textOf(res)]); return res; }),
      mw("Cmd", async (r, h) => { await h(r); return new Command({ update: { hits: ["cmd"] } }); }),
    ],
  },
  removeTool: {
    tools: [echo, other],
    make: (log) => [
      mw("A", async (r, h) => h({ ...r, tools: (r.tools as any[]).filter((t) => t.name !== "other") })),
      mw("B", async (r, h) => { log.push(["B tools", (r.tools as any[]).map((t) => t.name)]); return h(r); }),
    ],
  },
  replaceTool: {
    tools: [echo],
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", async (r, h) => h({ ...r, tools: [tool(async () => "x", { name: "echo", description: "e2", schema: z.object({}) })] })),
    ],
  },
  addToolNoWrap: {
    tools: [echo],
    make: () => [
      mw("A", async (r, h) => h({ ...r, tools: [...(r.tools as any[]), other] })),
      mw("B", async (r, h) => h(r)),
    ],
  },
  invalidResponse: {
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", async (r, h) => { await h(r); return "nope"; }),
    ],
  },
  syncThrow: {
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", () => { throw new Error("sync"); }),
    ],
  },
  stringThrow: {
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", async () => { throw "x"; }),
    ],
  },
  outerCommand: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h(r); log.push(["A", textOf(res)]); return new Command({ update: { hits: ["A"] } }); }),
      mw("B", async (r, h) => h(r)),
    ],
  },
  innerCommandNoAi: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h(r); log.push(["A", textOf(res)]); return res; }),
      mw("B", async () => new Command({ update: { hits: ["B"] } })),
    ],
  },
  innerCommandNoAiOuterAi: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h(r); log.push(["A", textOf(res)]); return new AIMessage({ content: "made", id: "made-1" }); }),
      mw("B", async () => new Command({ update: { hits: ["B"] } })),
    ],
  },
  twoCommands: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h(r); log.push(["A", textOf(res)]); return new Command({ update: { hits: ["A"] } }); }),
      mw("B", async (r, h) => { const res = await h(r); log.push(["B", textOf(res)]); return new Command({ update: { hits: ["B"] } }); }),
      mw("C", async (r, h) => h(r)),
    ],
  },
  interruptMember: {
    turns: [{ messages: [new HumanMessage({ content: "hi", id: "h-1" })] }, new Command({ resume: "yes" })],
    make: (log) => [
      mw("A", async (r, h) => h(r)),
      mw("B", async (r, h) => { const v = interrupt("ask"); log.push(["resumed", v]); return h(r); }),
    ],
  },
  multiTurnTools: {
    tools: [echo],
    replies: [{ tool_calls: [{ name: "echo", args: { x: "1" }, id: "c1" }] }, "after tool", "turn2"],
    turns: [{ messages: [new HumanMessage({ content: "hi", id: "h-1" })] }, { messages: [new HumanMessage({ content: "again", id: "h-2" })] }],
    make: (log) => [
      mw("A", async (r, h) => { log.push(["A msgs", r.messages.length, (r.state as any).messages.length]); return h({ ...r, systemPrompt: r.systemPrompt + " +A" }); }),
      mw("B", async (r, h) => { await h({ ...r, systemMessage: r.systemMessage.concat(" +B") }); return new Command({ update: { hits: ["B"] } }); }),
    ],
  },
  foreignBetween: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h({ ...r, systemPrompt: r.systemPrompt + " +A" }); log.push(["A", textOf(res)]); return res; }),
      mw("A2", async (r, h) => { await h(r); return new Command({ update: { hits: ["A2"] } }); }),
      createMiddleware({ name: "Foreign", wrapModelCall: async (r: any, h: any) => { const res = await h({ ...r, systemMessage: new SystemMessage("foreign") }); log.push(["F", textOf(res)]); return res; } }) as never,
      mw("B", async (r, h) => { log.push(["B prompt", r.systemPrompt]); await h(r); return new Command({ update: { hits: ["B"] } }); }),
      mw("C", async (r, h) => { const res = await h(r); return new AIMessage({ content: `${(res as AIMessage).content}!`, id: (res as AIMessage).id }); }),
    ],
  },
  bothChanged: {
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", async (r, h) => h({ ...r, systemPrompt: "x", systemMessage: new SystemMessage("y") })),
    ],
  },
  messageBackToOriginal: {
    make: (log) => [
      mw("A", async (r, h) => h({ ...r, systemMessage: new SystemMessage("changed") })),
      mw("B", async (r, h) => { log.push(["B", r.systemPrompt]); return h(r); }),
    ],
  },
  catchInner: {
    make: (log) => [
      mw("A", async (r, h) => { try { return await h(r); } catch (e) { log.push(["A caught", (e as Error).name, (e as Error).message]); return new AIMessage({ content: "fallback", id: "fb" }); } }),
      mw("B", async () => { throw new Error("inner"); }),
    ],
  },
  catchInvalid: {
    make: (log) => [
      mw("A", async (r, h) => { try { return await h(r); } catch (e) { log.push(["A caught", (e as Error).name, (e as Error).message]); return new AIMessage({ content: "fallback", id: "fb" }); } }),
      mw("B", async () => 42),
    ],
  },
  foreignRemovesThenMemberReAdds: {
    tools: [echo, other],
    make: () => [
      createMiddleware({ name: "ForeignRemove", wrapModelCall: async (r: any, h: any) => h({ ...r, tools: r.tools.filter((t: any) => t.name !== "other") }) }) as never,
      mw("A", async (r, h) => h({ ...r, tools: [...(r.tools as any[]), other] })),
      mw("B", async (r, h) => h(r)),
    ],
  },
  foreignAddsThenMemberReplaces: {
    tools: [echo],
    make: () => [
      createMiddleware({ name: "ForeignAdd", wrapModelCall: async (r: any, h: any) => h({ ...r, tools: [...r.tools, other] }), wrapToolCall: async (r: any, h: any) => h(r) }) as never,
      mw("A", async (r, h) => h({ ...r, tools: [...(r.tools as any[]).filter((t) => t.name !== "other"), tool(async () => "o2", { name: "other", description: "o2", schema: z.object({}) })] })),
      mw("B", async (r, h) => h(r)),
    ],
  },
  foreignRetryThenInnerCommand: {
    make: (log) => {
      let n = 0;
      return [
        createMiddleware({ name: "ForeignRetry", wrapModelCall: async (r: any, h: any) => { await h(r); return h(r); } }) as never,
        mw("A", async (r, h) => { const res = await h(r); log.push(["A saw", textOf(res)]); return res; }),
        mw("B", async (r, h) => (++n === 1 ? h(r) : new Command({ update: { hits: ["B"] } }))),
      ];
    },
  },
  foreignInnerCommand: {
    make: (log) => [
      mw("A", async (r, h) => { const res = await h(r); log.push(["A saw", textOf(res)]); return res; }),
      mw("B", async (r, h) => { const res = await h(r); log.push(["B saw", textOf(res)]); return res; }),
      createMiddleware({ name: "ForeignCmd", wrapModelCall: async () => new Command({ update: { hits: ["F"] } }) }) as never,
    ],
  },
  threePassThroughCommand: {
    make: () => [
      mw("A", async (r, h) => h(r)),
      mw("B", async (r, h) => h(r)),
      mw("C", async () => new Command({ update: { hits: ["C"] } })),
    ],
  },
};

/** The error as a caller sees it: interrupt or not, the outermost error and the root cause (the cause chain's depth
 * is the one documented difference: the fused layer pair wraps once each, as any langchain layer does). */
function visibleErrors(errors: unknown[]) {
  return (errors as { interrupt: boolean; chain: unknown[] }[]).map((e) => ({ interrupt: e.interrupt, outer: e.chain[0], root: e.chain.at(-1) }));
}

describe("fused model-call wrappers against langchain's per-layer composition", () => {
  for (const [name, s] of Object.entries(cases)) {
    it(name, async () => {
      const { ref, fus } = await compare(s);
      expect({ ...fus, errors: visibleErrors(fus.errors) }).toEqual({ ...ref, errors: visibleErrors(ref.errors) });
    });
  }
});
