import { RunnableLambda } from "@langchain/core/runnables";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { Annotation, getConfig, MemorySaver, StateGraph } from "@langchain/langgraph";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ContextSlot } from "../src/context-slot.js";
import { installLeanRunnableScope, uninstallLeanRunnableScope } from "../src/perf/runnable-scope.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));
/** How many AsyncLocalStorage stores Node copied onto a promise made here (one per enabled storage). */
const storesOnPromises = () => Object.getOwnPropertySymbols(Promise.resolve()).filter((s) => s.description === "kResourceStore").length;

describe("ContextSlot", () => {
  // Each case starts from langchain's own scope; the file leaves the server's patch in place as it found it.
  beforeEach(() => uninstallLeanRunnableScope());
  afterAll(() => void installLeanRunnableScope());

  it("carries a value through awaits, timers and nested scopes, and restores the outer one", async () => {
    const slot = new ContextSlot<string>("test.value");
    expect(slot.get()).toBeUndefined();
    await slot.run("outer", async () => {
      await tick();
      expect(slot.get()).toBe("outer");
      await slot.run("inner", async () => {
        await tick();
        expect(slot.get()).toBe("inner");
      });
      expect(slot.get()).toBe("outer");
      const later = await new Promise((resolve) => setTimeout(() => resolve(slot.get()), 1));
      expect(later).toBe("outer");
    });
    expect(slot.get()).toBeUndefined();
  });

  it("keeps slots independent of each other", async () => {
    const a = new ContextSlot<number>("test.a");
    const b = new ContextSlot<number>("test.b");
    await a.run(1, () =>
      b.run(2, async () => {
        await tick();
        expect([a.get(), b.get()]).toEqual([1, 2]);
        await a.run(3, async () => expect([a.get(), b.get()]).toEqual([3, 2]));
      }),
    );
  });

  it("enterWith sets the value for the rest of the async context only", async () => {
    const slot = new ContextSlot<string>("test.enter");
    await (async () => {
      await tick();
      slot.enterWith("entered");
      await tick();
      expect(slot.get()).toBe("entered");
    })();
    await tick();
    expect(slot.get()).toBeUndefined();
  });

  it.each([
    ["langchain's own scopes", false],
    ["the lean runnable scope", true],
  ])("is seen inside runnables, graph nodes and traceables under %s, and leaves their config to them", async (_label, lean) => {
    if (lean) installLeanRunnableScope();
    const slot = new ContextSlot<string>("test.graph");
    const seen: unknown[] = [];
    const lambda = RunnableLambda.from(async (x: number) => {
      await tick();
      seen.push(["lambda", slot.get(), AsyncLocalStorageProviderSingleton.getRunnableConfig()?.metadata?.marker]);
      // A slot entered inside a runnable scope still sees that scope's config.
      await slot.run("nested", async () => {
        seen.push(["nested", slot.get(), AsyncLocalStorageProviderSingleton.getRunnableConfig()?.metadata?.marker]);
      });
      return x + 1;
    });
    const traced = traceable(async () => slot.get(), { name: "t", tracingEnabled: false });
    const State = Annotation.Root({ n: Annotation<number> });
    const graph = new StateGraph(State)
      .addNode("step", async (s: typeof State.State) => {
        await tick();
        seen.push(["node", slot.get(), getConfig().configurable?.thread_id]);
        seen.push(["traceable", await traced()]);
        return { n: await lambda.invoke(s.n, { metadata: { marker: "m" } }) };
      })
      .addEdge("__start__", "step")
      .compile({ checkpointer: new MemorySaver() });
    const out = await slot.run("run-1", () => graph.invoke({ n: 1 }, { configurable: { thread_id: "t1" } }));
    expect(out.n).toBe(2);
    expect(seen).toEqual([
      ["node", "run-1", "t1"],
      ["traceable", "run-1"],
      ["lambda", "run-1", "m"],
      ["nested", "nested", "m"],
    ]);
  });

  it("does not leak a value into code still running in a store entered again from another context", async () => {
    const slot = new ContextSlot<string>("test.reenter");
    const storage = AsyncLocalStorageProviderSingleton.getInstance();
    const seen: unknown[] = [];
    await slot.run("outer", () =>
      RunnableLambda.from(async () => {
        const captured = storage.getStore();
        const sibling = (async () => {
          await tick();
          await tick();
          seen.push(["sibling", slot.get()]);
        })();
        await slot.run("nested", () => storage.run(captured, async () => seen.push(["re-entered", slot.get()])));
        seen.push(["after", slot.get()]);
        await sibling;
      }).invoke(1),
    );
    expect(seen).toEqual([
      ["re-entered", "nested"],
      ["after", "outer"],
      ["sibling", "outer"],
    ]);
  });

  it("adds no property to the process's promises: every slot shares langchain's storage", async () => {
    const first = new ContextSlot<string>("test.first");
    const before = await first.run("x", async () => storesOnPromises());
    const second = new ContextSlot<string>("test.second");
    const after = await second.run("y", async () => first.run("z", async () => storesOnPromises()));
    expect(before).toBeGreaterThan(0);
    expect(after).toBe(before);
  });
});
