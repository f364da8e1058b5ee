import type { AgentMiddleware, ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { assembleFromFeatures, insertExtra } from "../../src/agents/chain.js";
import { Next, Prev, RuntimeFeatures, type MiddlewareClass } from "../../src/agents/features.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { ClarificationMiddleware } from "../../src/agents/middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../../src/agents/middlewares/dangling-tool-call.js";
import { LoopDetectionMiddleware } from "../../src/agents/middlewares/loop-detection.js";
import { ThreadDataMiddleware } from "../../src/agents/middlewares/thread-data.js";
import { SubagentLimitMiddleware } from "../../src/agents/middlewares/subagent-limit.js";
import { TokenBudgetMiddleware } from "../../src/agents/middlewares/token-budget.js";
import { ToolErrorHandlingMiddleware } from "../../src/agents/middlewares/tool-error-handling.js";
import { SandboxMiddleware } from "../../src/agents/middlewares/sandbox.js";
import { DeerflowError } from "../../src/errors.js";

/** A fresh pass-through middleware class whose observable name (and class name) is `name`. */
function mwClass(name: string): new () => DeerflowMiddleware {
  const C = class extends DeerflowMiddleware {
    readonly name = name;
    wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
      return h(req) as never;
    }
  };
  Object.defineProperty(C, "name", { value: name });
  return C;
}
const mw = (name: string) => new (mwClass(name))();
const anchoredNext = (name: string, anchor: MiddlewareClass) => {
  const C = mwClass(name);
  Next(anchor)(C);
  return C;
};
const anchoredPrev = (name: string, anchor: MiddlewareClass) => {
  const C = mwClass(name);
  Prev(anchor)(C);
  return C;
};
const names = (chain: AgentMiddleware[]) => chain.map((m) => m.name);
const noSandbox = () => new RuntimeFeatures({ sandbox: false });
const build = (features: RuntimeFeatures, extras: AgentMiddleware[] = []) => insertExtra(assembleFromFeatures(features).middleware, extras);

describe("assembleFromFeatures: fixed chain (agent-factory.md §1.5, AF-002)", () => {
  it("without sandbox: Dangling, ToolErrorHandling, LoopDetection, Clarification, and the ask_clarification tool", () => {
    const { middleware, featureTools } = assembleFromFeatures(noSandbox());
    expect(names(middleware)).toEqual(["DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware", "LoopDetectionMiddleware", "ClarificationMiddleware"]);
    expect(featureTools.map((t) => t.name)).toEqual(["ask_clarification"]);
  });

  it("with default features the sandbox group is ThreadData, Uploads, Sandbox (AF-002b)", () => {
    const { middleware, featureTools } = assembleFromFeatures(new RuntimeFeatures());
    expect(names(middleware)).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware",
      "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
    expect(middleware[0]).toBeInstanceOf(ThreadDataMiddleware);
    expect((middleware[2] as SandboxMiddleware).lazyInit).toBe(true);
    expect(featureTools.map((t) => t.name)).toEqual(["ask_clarification"]);
  });

  it("constructs ToolErrorHandlingMiddleware without an app config (AF-002)", () => {
    const teh = assembleFromFeatures(new RuntimeFeatures()).middleware.find((m) => m instanceof ToolErrorHandlingMiddleware);
    expect(teh).toBeDefined();
    expect((teh as unknown as { appConfig?: unknown }).appConfig).toBeUndefined();
  });

  it("builds the full chain in the fixed order with every built-in and the feature tools (AF-003)", () => {
    const f = new RuntimeFeatures({
      sandbox: true, memory: true, summarization: mw("MySummarization"), subagent: true, vision: true, autoTitle: true, guardrail: mw("MyGuardrail"),
    });
    const { middleware, featureTools } = assembleFromFeatures(f, { planMode: true });
    expect(names(middleware)).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "MyGuardrail", "ToolErrorHandlingMiddleware",
      "MySummarization", "TodoMiddleware", "TitleMiddleware", "MemoryMiddleware", "ViewImageMiddleware", "SubagentLimitMiddleware",
      "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
    expect(featureTools.map((t) => t.name)).toEqual(["view_image", "task", "ask_clarification"]);
  });

  it("installs an inert TokenBudgetMiddleware for tokenBudget=true, right before Clarification", () => {
    const chain = assembleFromFeatures(new RuntimeFeatures({ sandbox: false, tokenBudget: true })).middleware;
    expect(names(chain).slice(-3)).toEqual(["LoopDetectionMiddleware", "TokenBudgetMiddleware", "ClarificationMiddleware"]);
    expect((chain.at(-2) as TokenBudgetMiddleware).config.enabled).toBe(false);
  });

  it("injects view_image only when both vision and sandbox are on (AF-008)", () => {
    const tools = (f: RuntimeFeatures) => assembleFromFeatures(f).featureTools.map((t) => t.name);
    const on = assembleFromFeatures(new RuntimeFeatures({ vision: true }));
    expect(on.featureTools.map((t) => t.name)).toContain("view_image");
    expect(names(on.middleware)).toContain("ViewImageMiddleware");
    expect(tools(new RuntimeFeatures({ vision: true, sandbox: false }))).not.toContain("view_image");
    const custom = new RuntimeFeatures({ vision: mw("MyVision"), sandbox: false });
    expect(tools(custom)).not.toContain("view_image");
    expect(names(assembleFromFeatures(custom).middleware)).toContain("MyVision");
    expect(tools(new RuntimeFeatures({ vision: mw("MyVision") }))).toContain("view_image");
  });

  it("injects task with subagent on, built-in or custom, and places SubagentLimit before LoopDetection (AF-009)", () => {
    const { middleware, featureTools } = assembleFromFeatures(new RuntimeFeatures({ subagent: true, sandbox: false }));
    expect(featureTools.map((t) => t.name)).toEqual(["task", "ask_clarification"]);
    expect(names(middleware)).toEqual([
      "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware", "SubagentLimitMiddleware", "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
    const limit = middleware[2] as SubagentLimitMiddleware;
    expect([limit.maxConcurrent, limit.maxTotal]).toEqual([3, 6]);
    expect(assembleFromFeatures(new RuntimeFeatures({ subagent: mw("MySub"), sandbox: false })).featureTools.map((t) => t.name)).toContain("task");
  });

  it("in memory tool mode adds the memory tools first and no MemoryMiddleware (spec 1.6)", () => {
    const { middleware, featureTools } = assembleFromFeatures(new RuntimeFeatures({ sandbox: true, vision: true, memory: true, memoryConfig: { mode: "tool" } }));
    expect(featureTools.map((t) => t.name)).toEqual(["memory_search", "memory_add", "memory_update", "memory_delete", "view_image", "ask_clarification"]);
    expect(names(middleware)).not.toContain("MemoryMiddleware");
  });

  it("keeps MemoryMiddleware (and no tools) when memory is disabled in tool mode, or in middleware mode", () => {
    for (const memoryConfig of [{ mode: "tool", enabled: false }, { mode: "middleware" }, null]) {
      const { middleware, featureTools } = assembleFromFeatures(new RuntimeFeatures({ sandbox: false, memory: true, memoryConfig }), { name: "researcher" });
      expect(names(middleware)).toContain("MemoryMiddleware");
      expect((middleware.find((m) => m.name === "MemoryMiddleware") as unknown as { agentName: string }).agentName).toBe("researcher");
      expect(featureTools.map((t) => t.name)).toEqual(["ask_clarification"]);
    }
  });

  it("builds the default LoopDetectionMiddleware with thresholds 3/5/20/100/30/50", () => {
    const loop = assembleFromFeatures(noSandbox()).middleware.find((m) => m instanceof LoopDetectionMiddleware) as LoopDetectionMiddleware;
    expect(loop.config).toMatchObject({ warn_threshold: 3, hard_limit: 5, window_size: 20, max_tracked_threads: 100, tool_freq_warn: 30, tool_freq_hard_limit: 50 });
  });

  it("puts custom instances in their slots in the full order (AF-003 with custom instances for unported built-ins)", () => {
    const f = new RuntimeFeatures({
      sandbox: mw("MySandbox"), guardrail: mw("MyGuardrail"), summarization: mw("MySummarization"), autoTitle: mw("MyTitle"),
      memory: mw("MyMemory"), vision: mw("MyVision"), subagent: mw("MySubagent"), loopDetection: mw("MyLoop"), tokenBudget: mw("MyBudget"),
    });
    expect(names(assembleFromFeatures(f).middleware)).toEqual([
      "MySandbox", "DanglingToolCallMiddleware", "MyGuardrail", "ToolErrorHandlingMiddleware", "MySummarization", "MyTitle",
      "MyMemory", "MyVision", "MySubagent", "MyLoop", "MyBudget", "ClarificationMiddleware",
    ]);
  });

  it("replaces the whole sandbox group with a custom instance placed first (AF-011)", () => {
    const custom = mw("MySandbox");
    const chain = assembleFromFeatures(new RuntimeFeatures({ sandbox: custom })).middleware;
    expect(chain[0]).toBe(custom);
    expect(chain.some((m) => m instanceof ThreadDataMiddleware)).toBe(false);
  });

  it("replaces memory with a custom instance and adds no memory tools (AF-012)", () => {
    const custom = mw("MyMemoryMiddleware");
    const { middleware, featureTools } = assembleFromFeatures(new RuntimeFeatures({ sandbox: false, memory: custom }));
    expect(middleware).toContain(custom);
    expect(names(middleware)).not.toContain("MemoryMiddleware");
    expect(featureTools.map((t) => t.name)).toEqual(["ask_clarification"]);
  });

  it("drops loop detection when off and uses a custom instance right before Clarification (AF-013)", () => {
    expect(names(assembleFromFeatures(new RuntimeFeatures({ sandbox: false, loopDetection: false })).middleware)).not.toContain("LoopDetectionMiddleware");
    const chain = assembleFromFeatures(new RuntimeFeatures({ sandbox: false, loopDetection: mw("MyLoopDetection") })).middleware;
    expect(names(chain)).not.toContain("LoopDetectionMiddleware");
    expect(names(chain).slice(-2)).toEqual(["MyLoopDetection", "ClarificationMiddleware"]);
  });

  it("places a custom guardrail right after DanglingToolCall (AF-007c)", () => {
    const chain = names(assembleFromFeatures(new RuntimeFeatures({ sandbox: false, guardrail: mw("MyGuardrail") })).middleware);
    expect(chain.indexOf("MyGuardrail")).toBe(chain.indexOf("DanglingToolCallMiddleware") + 1);
    expect(chain).not.toContain("GuardrailMiddleware");
  });

  it.each(["summarization", "guardrail"] as const)("rejects %s=true: it needs a custom middleware (AF-007)", (flag) => {
    const f = new RuntimeFeatures({ sandbox: false });
    (f as unknown as Record<string, unknown>)[flag] = true;
    expect(() => assembleFromFeatures(f)).toThrow(DeerflowError);
    expect(() => assembleFromFeatures(f)).toThrow(`${flag}=true requires a custom AgentMiddleware`);
  });

  it("adds TodoMiddleware right after ToolErrorHandling in plan mode, and none by default (AF-014)", () => {
    const chain = names(assembleFromFeatures(noSandbox(), { planMode: true }).middleware);
    expect(chain.indexOf("TodoMiddleware")).toBe(chain.indexOf("ToolErrorHandlingMiddleware") + 1);
    expect(names(assembleFromFeatures(noSandbox()).middleware)).not.toContain("TodoMiddleware");
  });

  it("keeps Clarification last with sandbox, memory and vision on (AF-020b)", () => {
    expect(names(assembleFromFeatures(new RuntimeFeatures({ memory: true, vision: true })).middleware).at(-1)).toBe("ClarificationMiddleware");
  });
});

describe("insertExtra: placement (agent-factory.md §1.8, AF-015, AF-020)", () => {
  it("puts @Next(X) right after X", () => {
    const chain = names(build(noSandbox(), [new (anchoredNext("AfterDangling", DanglingToolCallMiddleware))()]));
    expect(chain.indexOf("AfterDangling")).toBe(chain.indexOf("DanglingToolCallMiddleware") + 1);
  });

  it("puts @Prev(X) right before X", () => {
    const chain = names(build(noSandbox(), [new (anchoredPrev("BeforeClar", ClarificationMiddleware))()]));
    expect(chain.indexOf("BeforeClar")).toBe(chain.indexOf("ClarificationMiddleware") - 1);
  });

  it("puts unanchored extras just before Clarification, keeping their order", () => {
    expect(names(build(noSandbox(), [mw("A"), mw("B")])).slice(-3)).toEqual(["A", "B", "ClarificationMiddleware"]);
  });

  it("moves Clarification back to the end after a @Next(ClarificationMiddleware) extra", () => {
    const chain = names(build(noSandbox(), [new (anchoredNext("AfterClar", ClarificationMiddleware))()]));
    expect(chain.slice(-2)).toEqual(["AfterClar", "ClarificationMiddleware"]);
  });

  it("matches an anchor by instanceof, so a subclass instance in the chain is a valid anchor", () => {
    class MyDangling extends DanglingToolCallMiddleware {}
    const chain = insertExtra([mw("Start"), new MyDangling(), new ClarificationMiddleware()], [new (anchoredNext("X", DanglingToolCallMiddleware))()]);
    expect(chain[2].name).toBe("X");
    expect(chain[1]).toBeInstanceOf(MyDangling);
  });

  it("resolves extras anchored on each other regardless of the given order", () => {
    const First = anchoredNext("First", DanglingToolCallMiddleware);
    const Second = anchoredNext("Second", First);
    const Third = anchoredPrev("Third", Second);
    for (const extras of [[new Second(), new First(), new Third()], [new Third(), new Second(), new First()]]) {
      const chain = names(build(noSandbox(), extras));
      const i = chain.indexOf("DanglingToolCallMiddleware");
      expect(chain.slice(i, i + 4)).toEqual(["DanglingToolCallMiddleware", "First", "Third", "Second"]);
    }
  });

  it("does not mutate the input chain", () => {
    const chain = assembleFromFeatures(noSandbox()).middleware;
    const before = [...chain];
    insertExtra(chain, [mw("A")]);
    expect(chain).toEqual(before);
  });

  it("works with TC39 decorator syntax", () => {
    @Next(ToolErrorHandlingMiddleware)
    class Audit extends DeerflowMiddleware {
      name = "Audit";
      wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
        return h(req) as never;
      }
    }
    const chain = names(build(noSandbox(), [new Audit()]));
    expect(chain.indexOf("Audit")).toBe(chain.indexOf("ToolErrorHandlingMiddleware") + 1);
  });
});

describe("insertExtra: errors (AF-016, AF-018)", () => {
  const errorOf = (extras: AgentMiddleware[], features = noSandbox()) => {
    try {
      build(features, extras);
    } catch (e) {
      return e as DeerflowError;
    }
    throw new Error("expected insertExtra to throw");
  };

  it("rejects two extras with the same @Next anchor", () => {
    const e = errorOf([new (anchoredNext("A", DanglingToolCallMiddleware))(), new (anchoredNext("B", DanglingToolCallMiddleware))()]);
    expect(e.code).toBe("validation_failed");
    expect(e.message).toContain("Conflict");
    expect(e.message).toContain("both @Next(DanglingToolCallMiddleware)");
  });

  it("rejects two extras with the same @Prev anchor", () => {
    const e = errorOf([new (anchoredPrev("A", ClarificationMiddleware))(), new (anchoredPrev("B", ClarificationMiddleware))()]);
    expect(e.message).toContain("Conflict");
    expect(e.message).toContain("both @Prev(ClarificationMiddleware)");
  });

  it("rejects @Next(X) and @Prev(X) on the same anchor, pointing to cross-anchoring", () => {
    expect(errorOf([new (anchoredNext("A", DanglingToolCallMiddleware))(), new (anchoredPrev("B", DanglingToolCallMiddleware))()]).message).toContain("cross-anchoring");
    expect(errorOf([new (anchoredPrev("A", DanglingToolCallMiddleware))(), new (anchoredNext("B", DanglingToolCallMiddleware))()]).message).toContain("cross-anchoring");
  });

  it("rejects an extra with both @Next and @Prev", () => {
    const C = mwClass("Both");
    Next(DanglingToolCallMiddleware)(C);
    Prev(ClarificationMiddleware)(C);
    expect(errorOf([new C()]).message).toContain("Both cannot have both @Next and @Prev");
  });

  it("rejects an anchor that is not in the chain", () => {
    const Ghost = mwClass("Ghost");
    const e = errorOf([new (anchoredNext("Lost", Ghost))()]);
    expect(e.message).toContain("Cannot resolve positions for Lost");
    expect(e.message).toContain("Ghost not found in chain");
  });

  it("rejects anchoring on ThreadDataMiddleware when the sandbox group is off", () => {
    expect(errorOf([new (anchoredNext("AfterThreadData", ThreadDataMiddleware))()]).message).toContain("Cannot resolve");
    expect(names(build(new RuntimeFeatures(), [new (anchoredNext("AfterThreadData", ThreadDataMiddleware))()])).slice(0, 2)).toEqual([
      "ThreadDataMiddleware", "AfterThreadData",
    ]);
  });

  it("reports a circular dependency among extras", () => {
    const A = mwClass("A");
    const B = mwClass("B");
    Next(B)(A);
    Next(A)(B);
    expect(errorOf([new A(), new B()]).message).toContain("Circular dependency among extra middlewares");
  });
});
