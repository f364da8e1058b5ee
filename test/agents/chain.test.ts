import type { AgentMiddleware, ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { assembleFromFeatures, FeatureUnavailableError, insertExtra } from "../../src/agents/chain.js";
import { Next, Prev, RuntimeFeatures, type MiddlewareClass } from "../../src/agents/features.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { ClarificationMiddleware } from "../../src/agents/middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../../src/agents/middlewares/dangling-tool-call.js";
import { LoopDetectionMiddleware } from "../../src/agents/middlewares/loop-detection.js";
import { ThreadDataMiddleware } from "../../src/agents/middlewares/thread-data.js";
import { ToolErrorHandlingMiddleware } from "../../src/agents/middlewares/tool-error-handling.js";
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

  it("with default features the sandbox group is ThreadDataMiddleware only (Uploads/Sandbox not ported yet)", () => {
    const { middleware } = assembleFromFeatures(new RuntimeFeatures());
    expect(names(middleware)).toEqual([
      "ThreadDataMiddleware", "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware", "LoopDetectionMiddleware", "ClarificationMiddleware",
    ]);
    expect(middleware[0]).toBeInstanceOf(ThreadDataMiddleware);
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

  it.each([
    ["memory", "MemoryMiddleware"],
    ["autoTitle", "TitleMiddleware"],
    ["vision", "ViewImageMiddleware"],
    ["subagent", "SubagentLimitMiddleware"],
    ["tokenBudget", "TokenBudgetMiddleware"],
  ] as const)("rejects %s=true with FeatureUnavailableError because the built-in %s is not shipped", (flag, builtIn) => {
    const f = new RuntimeFeatures({ sandbox: false, [flag]: true });
    let err: unknown;
    try {
      assembleFromFeatures(f);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FeatureUnavailableError);
    expect((err as FeatureUnavailableError).code).toBe("unsupported");
    expect((err as Error).message).toContain(`RuntimeFeatures.${flag}=true`);
    expect((err as Error).message).toContain(builtIn);
  });

  it("rejects plan mode with FeatureUnavailableError (TodoMiddleware is not shipped) and adds no Todo by default (AF-014)", () => {
    expect(() => assembleFromFeatures(noSandbox(), { planMode: true })).toThrow(FeatureUnavailableError);
    expect(() => assembleFromFeatures(noSandbox(), { planMode: true })).toThrow("TodoMiddleware");
    expect(names(assembleFromFeatures(noSandbox()).middleware)).not.toContain("TodoMiddleware");
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
