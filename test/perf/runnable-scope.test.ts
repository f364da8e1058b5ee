import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { getContextVariable, setContextVariable } from "@langchain/core/context";
import { AIMessage } from "@langchain/core/messages";
import { RunnableLambda } from "@langchain/core/runnables";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Annotation, Command, getConfig, interrupt, MemorySaver, MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { isRunTree, RunTree } from "langsmith/run_trees";
import { getCurrentRunTree, traceable } from "langsmith/traceable";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { installLeanRunnableScope, uninstallLeanRunnableScope } from "../../src/perf/runnable-scope.js";

const store = () => AsyncLocalStorageProviderSingleton.getInstance().getStore() as Record<PropertyKey, unknown> | undefined;
const hasOwn = (o: object | undefined, k: string) => o !== undefined && Object.prototype.hasOwnProperty.call(o, k);

/** Runs `fn` with environment variables set (undefined: unset), restoring their values afterwards. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

/**
 * Callbacks holding a `langchain_tracer` whose run tree is `fromTracer`, as a child manager with a parent run (the
 * original only asks the tracer when the manager has one).
 */
async function tracerCallbacks(fromTracer: object) {
  class Tracer extends BaseCallbackHandler {
    name = "langchain_tracer";
    getRunTreeWithTracingConfig() {
      return fromTracer;
    }
  }
  const manager = CallbackManager.configure([new Tracer()]);
  const run = await manager!.handleChainStart({ lc: 1, type: "not_implemented", id: ["x"] }, {});
  return run.getChild();
}

/** A graph whose nodes read their config, run a traceable, set and read a context variable, call a model and interrupt. */
function buildGraph() {
  const State = Annotation.Root({ ...MessagesAnnotation.spec, seen: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }) });
  const model = new FakeListChatModel({ responses: ["hello there"] });
  const traced = traceable(async (x: string) => `${x}:${isRunTree(getCurrentRunTree(true))}`, { name: "traced" });
  return new StateGraph(State)
    .addNode("first", async (_s, config) => {
      const own = getConfig();
      const child = await RunnableLambda.from(async () => {
        setContextVariable("who", "first");
        return RunnableLambda.from(async () => getContextVariable("who")).invoke(null);
      }).invoke(null);
      const tree = getCurrentRunTree(true);
      return { seen: [`store=${isRunTree(tree)}:${typeof tree?.id}:${typeof tree?.dotted_order}`, `thread=${own.configurable?.thread_id}`, `same=${own.configurable?.thread_id === config.configurable?.thread_id}`, `ctx=${child}`, await traced("traceable")] };
    })
    .addNode("model", async (s) => ({ messages: [await model.invoke(s.messages)] }))
    .addNode("ask", async () => ({ seen: [`answer=${interrupt("question?") as string}`] }))
    .addEdge("__start__", "first")
    .addEdge("first", "model")
    .addEdge("model", "ask")
    .compile({ checkpointer: new MemorySaver() });
}

/** Runs the graph to its interrupt and resumes it, returning what a caller sees (streamed parts and final values). */
async function exercise() {
  const graph = buildGraph();
  const config = { configurable: { thread_id: "t-1" } };
  const parts: unknown[] = [];
  for await (const [mode, chunk] of await graph.stream({ messages: [{ role: "user", content: "hi" }] }, { ...config, streamMode: ["values", "messages", "updates"] })) {
    parts.push([mode, mode === "messages" ? (chunk as unknown as [AIMessage])[0].content : chunk]);
  }
  const resumed = await graph.invoke(new Command({ resume: "yes" }), config);
  return { parts: JSON.parse(JSON.stringify(parts, (k, v) => (k === "id" || k === "lc_kwargs" ? undefined : v))), seen: resumed.seen, last: resumed.messages.at(-1)?.content };
}

describe("installLeanRunnableScope", () => {
  afterEach(() => installLeanRunnableScope());
  afterAll(() => installLeanRunnableScope());

  it("gives graphs, traceables and context variables what @langchain/core's own scope gives them", async () => {
    uninstallLeanRunnableScope();
    const expected = await exercise();
    expect(expected.seen).toEqual(["store=true:string:string", "thread=t-1", "same=true", "ctx=first", expect.stringMatching(/^traceable:/), "answer=yes"]);
    expect(installLeanRunnableScope()).toBe(true);
    expect(await exercise()).toEqual(expected);
  });

  it("stores a placeholder that becomes a complete RunTree on first use", async () => {
    expect(installLeanRunnableScope()).toBe(true);
    const config = { configurable: { probe: 1 } };
    const seen = await new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig(config, () => resolve(store()!)));
    // The fast path: the config is there, nothing else was built.
    expect((seen.extra as Record<symbol, unknown>)[Symbol.for("lc:child_config")]).toBe(config);
    expect(seen.name).toBe("<runnable_lambda>");
    expect(seen.tracingEnabled).toBe(false);
    expect(hasOwn(seen, "id")).toBe(false);
    // langsmith's isRunTree probes a method: the RunTree's fields are built then.
    expect(isRunTree(seen)).toBe(true);
    expect(hasOwn(seen, "id")).toBe(true);
    expect(seen).toBeInstanceOf(RunTree);
    expect(typeof seen.id).toBe("string");
    expect(seen.trace_id).toBe(seen.id);
    expect(String(seen.dotted_order)).toContain(String(seen.id));
    const child = (seen.createChild as (c: object) => RunTree).call(seen, { name: "child" });
    expect(child.parent_run).toBe(seen);
    expect(child.trace_id).toBe(seen.id);
    // A clone (what setContextVariable makes) carries the config and the fields.
    const clone = new RunTree(seen as unknown as RunTree) as unknown as Record<PropertyKey, unknown>;
    expect(clone.id).toBe(seen.id);
    expect((clone.extra as Record<symbol, unknown>)[Symbol.for("lc:child_config")]).toBe(config);
  });

  it("a write to a RunTree field builds the rest first and keeps the written value", async () => {
    installLeanRunnableScope();
    const seen = await new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!)));
    seen.end_time = 42;
    expect(seen.end_time).toBe(42);
    expect(typeof seen.id).toBe("string");
    seen.metadata = { a: 1 };
    expect(seen.metadata).toEqual({ a: 1 });
  });

  it("leaves the scope to @langchain/core when a LangSmith tracer is among the callbacks", async () => {
    installLeanRunnableScope();
    const fromTracer = { from: "tracer" };
    const callbacks = await tracerCallbacks(fromTracer);
    const seen = await new Promise((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({ callbacks }, () => resolve(store())));
    expect(seen).toBe(fromTracer);
  });

  it("under an enclosing RunTree with tracing off, ignores tracers and the environment, as @langchain/core does", async () => {
    const fromTracer = { from: "tracer" };
    const config = { callbacks: await tracerCallbacks(fromTracer), configurable: { k: 1 } };
    const outer = new RunTree({ name: "outer", tracingEnabled: false, client: {} as never });
    const inner = () =>
      new Promise<Record<PropertyKey, unknown>>((resolve) =>
        AsyncLocalStorageProviderSingleton.getInstance().run(outer, () => AsyncLocalStorageProviderSingleton.runWithConfig(config, () => resolve(store()!))),
      );
    await withEnv({ LANGSMITH_TRACING: "true" }, async () => {
      uninstallLeanRunnableScope();
      const original = await inner();
      installLeanRunnableScope();
      const patched = await inner();
      for (const seen of [original, patched]) {
        expect(seen).not.toBe(fromTracer);
        expect(seen.name).toBe("<runnable_lambda>");
        expect((seen.extra as Record<symbol, unknown>)[Symbol.for("lc:child_config")]).toBe(config);
      }
      expect(hasOwn(original, "id")).toBe(true);
      expect(hasOwn(patched, "id")).toBe(false);
    });
  });

  it("leaves the scope to @langchain/core under a context variable, and when LangSmith tracing is switched on", async () => {
    installLeanRunnableScope();
    const underVariable = await new Promise<Record<PropertyKey, unknown>>((resolve) =>
      RunnableLambda.from(async () => {
        setContextVariable("k", "v");
        AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!));
      }).invoke(null),
    );
    expect(hasOwn(underVariable, "id")).toBe(true);
    expect((underVariable[Symbol.for("lc:context_variables")] as Record<string, unknown>).k).toBe("v");
    const traced = await withEnv({ LANGSMITH_TRACING: "true" }, () =>
      new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!))),
    );
    expect(hasOwn(traced, "id")).toBe(true);
  });

  it("builds no LangSmith client when it installs: one made later reads the environment of that moment", async () => {
    uninstallLeanRunnableScope();
    // What @langchain/core stores is an instance of the RunTree class this patch builds on (same langsmith package).
    const original = await new Promise((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store())));
    expect(original).toBeInstanceOf(RunTree);
    const shared = RunTree as unknown as { sharedClient?: unknown };
    const savedClient = shared.sharedClient;
    shared.sharedClient = undefined;
    try {
      await withEnv({ LANGSMITH_TRACING: "true", LANGSMITH_ENDPOINT: undefined }, async () => {
        expect(installLeanRunnableScope()).toBe(true);
        expect(shared.sharedClient).toBeUndefined();
        process.env.LANGSMITH_ENDPOINT = "http://127.0.0.1:18080";
        delete process.env.LANGSMITH_TRACING;
        const seen = await new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!)));
        expect((seen.client as { apiUrl: string }).apiUrl).toBe("http://127.0.0.1:18080");
      });
    } finally {
      shared.sharedClient = savedClient;
    }
  });

  it("reads through objects derived from the store, and over a field defined on it before first use", async () => {
    installLeanRunnableScope();
    const seen = await new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!)));
    const derived = Object.create(seen) as Record<PropertyKey, unknown>;
    expect(typeof derived.id).toBe("string");
    expect(hasOwn(seen, "id")).toBe(true);
    expect(hasOwn(derived, "id")).toBe(false);
    const other = await new Promise<Record<PropertyKey, unknown>>((resolve) => AsyncLocalStorageProviderSingleton.runWithConfig({}, () => resolve(store()!)));
    Object.defineProperty(other, "id", { value: "mine", writable: true, configurable: true, enumerable: true });
    expect(typeof other.client).toBe("object");
    expect(typeof other.trace_id).toBe("string");
  });

  it("installs once, and puts the original back", () => {
    expect(installLeanRunnableScope()).toBe(true);
    const patched = AsyncLocalStorageProviderSingleton.runWithConfig;
    expect(installLeanRunnableScope()).toBe(true);
    expect(AsyncLocalStorageProviderSingleton.runWithConfig).toBe(patched);
    uninstallLeanRunnableScope();
    expect(AsyncLocalStorageProviderSingleton.runWithConfig).not.toBe(patched);
  });
});
