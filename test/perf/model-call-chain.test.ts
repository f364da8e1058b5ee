import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Command, StateSchema } from "@langchain/langgraph";
import { createAgent, MiddlewareError, type AgentMiddleware, type ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../src/agents/factory.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { fuseModelCallWrappers } from "../../src/perf/model-call-chain.js";
import { ThreadState, ThreadStateFields } from "../../src/agents/thread-state.js";

type Handler = (r: ModelRequest) => unknown;
const textOf = (m: unknown) => (AIMessage.isInstance(m) ? String(m.content) : "command");

/** A chain exercising every per-layer rule: prompt and message rewrites, Commands, a replaced AIMessage. */
function chain(log: unknown[], failIn?: string): AgentMiddleware[] {
  class PromptAppend extends DeerflowMiddleware {
    name = "PromptAppend";
    async wrapModelCall(req: ModelRequest, handler: Handler) {
      const res = await handler({ ...req, systemPrompt: `${req.systemPrompt} +A` });
      log.push(["PromptAppend saw", textOf(res)]);
      return res as never;
    }
  }
  class TitleCommand extends DeerflowMiddleware {
    name = "TitleCommand";
    readonly stateSchema = new StateSchema({ title: ThreadStateFields.title });
    async wrapModelCall(req: ModelRequest, handler: Handler) {
      const res = await handler(req);
      log.push(["TitleCommand saw", textOf(res), (req.state as { title?: unknown }).title ?? null]);
      return new Command({ update: { title: "T" } }) as never;
    }
  }
  class Rewrite extends DeerflowMiddleware {
    name = "Rewrite";
    async wrapModelCall(req: ModelRequest, handler: Handler) {
      const res = (await handler(req)) as AIMessage;
      if (failIn === "Rewrite") throw new Error("rewrite failed");
      log.push(["Rewrite saw", textOf(res)]);
      return new AIMessage({ content: `${res.content}!`, id: res.id }) as never;
    }
  }
  class MessageSwap extends DeerflowMiddleware {
    name = "MessageSwap";
    wrapModelCall(req: ModelRequest, handler: Handler) {
      log.push(["MessageSwap got prompt", req.systemPrompt]);
      return handler({ ...req, systemMessage: req.systemMessage.concat(" +B") }) as never;
    }
  }
  class Artifacts extends DeerflowMiddleware {
    name = "Artifacts";
    async wrapModelCall(req: ModelRequest, handler: Handler) {
      const res = await handler(req);
      log.push(["Artifacts saw", textOf(res), req.messages.length]);
      return new Command({ update: { artifacts: ["a.txt"], messages: [new HumanMessage({ content: "note", id: "note-1" })] } }) as never;
    }
  }
  return [new PromptAppend(), new TitleCommand(), new Rewrite(), new MessageSwap(), new Artifacts()];
}

/** The system prompt text the chat model received, per call. */
class Prompts extends BaseCallbackHandler {
  name = "prompts";
  seen: string[] = [];
  override handleChatModelStart(_llm: unknown, messages: BaseMessage[][]) {
    this.seen.push(messages[0][0].text);
  }
}

/** Runs one agent over one user turn: what a user and the graph see. */
async function observe(fused: boolean, failIn?: string) {
  const log: unknown[] = [];
  const middleware = chain(log, failIn);
  const model = new FakeListChatModel({ responses: ["hello"] });
  const agent = fused
    ? createDeerflowAgent(model, null, { middleware, systemPrompt: "base" })
    : createAgent({ model, middleware: middleware as never, stateSchema: ThreadState as never, systemPrompt: "base", name: "default" });
  const prompts = new Prompts();
  const updates: unknown[] = [];
  let values: Record<string, unknown> = {};
  let error: unknown = null;
  try {
    const stream = await (agent as { stream: (i: unknown, c: unknown) => Promise<AsyncIterable<[string, unknown]>> }).stream(
      // A title already in the state: the member declaring it must see it.
      { messages: [new HumanMessage({ content: "hi", id: "h-1" })], title: "seed" },
      { streamMode: ["updates", "values"], callbacks: [prompts] },
    );
    for await (const [mode, chunk] of stream) {
      // Model message ids are random per call: compared as a placeholder.
      if (mode === "updates") updates.push(JSON.parse(JSON.stringify(chunk, (k, v) => (k === "id" && typeof v === "string" && v.startsWith("run-") ? "<model id>" : v))));
      else values = chunk as Record<string, unknown>;
    }
  } catch (err) {
    error = err;
  }
  const messages = ((values.messages ?? []) as BaseMessage[]).map((m) => [m.getType(), m.content, m.name ?? null]);
  return { log, prompts: prompts.seen, updates, title: values.title, artifacts: values.artifacts, messages, error };
}

describe("fused model-call wrappers", () => {
  it("answer a user turn exactly as one langchain layer per middleware does", async () => {
    const reference = await observe(false);
    const fused = await observe(true);
    expect(fused.prompts).toEqual(["base +A +B"]);
    expect(fused.title).toBe("T");
    expect(fused.artifacts).toEqual(["a.txt"]);
    // The member declaring `title` saw the thread's title; the one above it saw the rewritten message, not the Command.
    expect(fused.log).toContainEqual(["TitleCommand saw", "hello!", "seed"]);
    expect(fused.messages).toEqual([
      ["human", "hi", null],
      ["ai", "hello!", "default"],
      ["human", "note", null],
    ]);
    expect(fused).toEqual(reference);
  });

  it("wrap a member's error like langchain: the caller gets the same error, name and message, with the thrown one as root cause", async () => {
    const reference = await observe(false, "Rewrite");
    const fused = await observe(true, "Rewrite");
    const causes = (e: unknown) => {
      const out: { name?: string; message?: string; cause?: unknown }[] = [];
      for (let cur = e as { name?: string; message?: string; cause?: unknown } | undefined; cur; cur = cur.cause as typeof cur) out.push(cur);
      return out;
    };
    const [outer, root] = [causes(fused.error)[0], causes(fused.error).at(-1)];
    expect([outer.name, outer.message]).toEqual([causes(reference.error)[0].name, causes(reference.error)[0].message]);
    expect(MiddlewareError.isInstance(outer)).toBe(true);
    expect([root?.name, root?.message]).toEqual(["Error", "rewrite failed"]);
    // Only the depth of the cause chain differs: the fused layer pair wraps once each, as any langchain layer does.
    expect(causes(fused.error).slice(0, -1).every((e) => MiddlewareError.isInstance(e))).toBe(true);
    expect(fused.log).toEqual(reference.log);
    expect(fused.title).toEqual(reference.title);
  });

  it("keeps the chain as assembled in the agent's options and adds no graph node", async () => {
    const log: unknown[] = [];
    const middleware = chain(log);
    const model = new FakeListChatModel({ responses: ["x"] });
    const fused = createDeerflowAgent(model, null, { middleware });
    const reference = createAgent({ model, middleware: middleware as never, stateSchema: ThreadState as never, name: "default" });
    expect((fused as unknown as { options: { middleware: AgentMiddleware[] } }).options.middleware).toEqual(middleware);
    const nodes = (a: unknown) => Object.keys((a as { graph: { nodes: Record<string, unknown> } }).graph.nodes).sort();
    expect(nodes(fused)).toEqual(nodes(reference));
  });

  it("fuses only runs of two or more of the gateway's own wrappers, in place", () => {
    const [a, b, c] = chain([]);
    const foreign = { name: "Foreign", wrapModelCall: (r: ModelRequest, h: Handler) => h(r) } as unknown as AgentMiddleware;
    const names = (list: AgentMiddleware[]) => list.map((m) => `${m.name}${typeof m.wrapModelCall === "function" ? "*" : ""}`);
    expect(names(fuseModelCallWrappers([a, foreign, b, c]))).toEqual([
      "PromptAppend*",
      "Foreign*",
      "DeerflowModelCallChain*",
      "DeerflowModelCallChain.members*",
      "TitleCommand",
      "Rewrite",
    ]);
    const single = [a, foreign];
    expect(fuseModelCallWrappers(single)).toBe(single);
  });
});
