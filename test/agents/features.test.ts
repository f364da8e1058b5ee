import type { ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { getAnchors, Next, Prev, RuntimeFeatures } from "../../src/agents/features.js";
import { DeerflowMiddleware } from "../../src/agents/middlewares/base.js";
import { ClarificationMiddleware } from "../../src/agents/middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "../../src/agents/middlewares/dangling-tool-call.js";

describe("RuntimeFeatures defaults (AF-021)", () => {
  it("turns sandbox and loop detection on and everything else off", () => {
    const f = new RuntimeFeatures();
    expect(f).toEqual({
      sandbox: true,
      memory: false,
      memoryConfig: null,
      summarization: false,
      subagent: false,
      vision: false,
      autoTitle: false,
      guardrail: false,
      loopDetection: true,
      tokenBudget: false,
    });
  });

  it("keeps explicit values, including false for default-on flags", () => {
    const f = new RuntimeFeatures({ sandbox: false, loopDetection: false, memory: true });
    expect([f.sandbox, f.loopDetection, f.memory]).toEqual([false, false, true]);
  });
});

describe("@Next / @Prev decorators (agent-factory.md §1.8)", () => {
  it("record the anchor on the decorated class, readable from an instance", () => {
    @Next(DanglingToolCallMiddleware)
    class AfterDangling extends DeerflowMiddleware {
      name = "AfterDangling";
      wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
        return h(req) as never;
      }
    }
    @Prev(ClarificationMiddleware)
    class BeforeClarification extends DeerflowMiddleware {
      name = "BeforeClarification";
      wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
        return h(req) as never;
      }
    }
    expect(getAnchors(new AfterDangling())).toEqual({ next: DanglingToolCallMiddleware });
    expect(getAnchors(new BeforeClarification())).toEqual({ prev: ClarificationMiddleware });
    expect(getAnchors(new DanglingToolCallMiddleware())).toEqual({});
  });

  it("are inherited by subclasses, as DeerFlow reads them with getattr(type(mw), ...)", () => {
    @Next(DanglingToolCallMiddleware)
    class Parent extends DeerflowMiddleware {
      name = "Parent";
      wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
        return h(req) as never;
      }
    }
    class Child extends Parent {
      override name = "Child";
    }
    @Prev(ClarificationMiddleware)
    class BothViaInheritance extends Parent {
      override name = "BothViaInheritance";
    }
    @Next(ClarificationMiddleware)
    class Overriding extends Parent {
      override name = "Overriding";
    }
    expect(getAnchors(new Child())).toEqual({ next: DanglingToolCallMiddleware });
    expect(getAnchors(new BothViaInheritance())).toEqual({ next: DanglingToolCallMiddleware, prev: ClarificationMiddleware });
    expect(getAnchors(new Overriding())).toEqual({ next: ClarificationMiddleware });
  });

  it("throw a TypeError at decoration time for an anchor that is not a middleware class (AF-006)", () => {
    const decorateNextWithString = () => {
      @Next(String as never)
      class Bad extends DeerflowMiddleware {
        name = "Bad";
      }
      return Bad;
    };
    expect(decorateNextWithString).toThrow(TypeError);
    expect(decorateNextWithString).toThrow("AgentMiddleware subclass");
    expect(decorateNextWithString).toThrow("got String");
    expect(() => Prev(42 as never)).toThrow("AgentMiddleware subclass");
    expect(() => Prev(42 as never)).toThrow("got number");
    expect(() => Next(null as never)).toThrow("got null");
  });
});
