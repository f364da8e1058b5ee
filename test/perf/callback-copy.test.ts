import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { AIMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Annotation, MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { installLinearCallbackCopy, uninstallLinearCallbackCopy } from "../../src/perf/callback-copy.js";

class Named extends BaseCallbackHandler {
  constructor(readonly name: string) {
    super();
  }
}

/** What a copy holds, in a comparable form (key order included). */
function shape(m: CallbackManager) {
  return {
    metadata: Object.entries(m.metadata),
    inheritableMetadata: Object.entries(m.inheritableMetadata),
    metadataProto: Object.getPrototypeOf(m.metadata),
    tags: [...m.tags],
    inheritableTags: [...m.inheritableTags],
    handlers: m.handlers.map((h) => h.name),
    inheritableHandlers: m.inheritableHandlers.map((h) => h.name),
    parent: m.getParentRunId(),
  };
}

/** A manager with `n` metadata keys, some inheritable, some local, one named __proto__, plus tags and handlers. */
function sample(n: number, seed: number): CallbackManager {
  const m = new CallbackManager(`parent-${seed}`);
  m.addHandler(new Named("inherited"), true);
  m.addHandler(new Named("local"), false);
  m.addTags(["a", "b"], true);
  m.addTags(["local-tag"], false);
  for (let i = 0; i < n; i++) m.addMetadata({ [`k${(i * 7 + seed) % (n + 3)}`]: { i, seed } }, (i + seed) % 3 !== 0);
  m.addMetadata(JSON.parse('{"__proto__": {"polluted": true}}'), true);
  // A key only the inheritable side has (the original drops it from the copy).
  m.inheritableMetadata = { ...m.inheritableMetadata, only_inheritable: 1 };
  return m;
}

describe("installLinearCallbackCopy", () => {
  afterAll(() => installLinearCallbackCopy());

  it("copies exactly what @langchain/core's own copy does", () => {
    uninstallLinearCallbackCopy();
    const cases = [0, 1, 5, 25, 60].flatMap((n) => [0, 1, 2].map((seed) => ({ n, seed })));
    const extra = () => [new Named("added"), new Named("inherited")];
    const expected = cases.map(({ n, seed }) => [sample(n, seed).copy(), sample(n, seed).copy(extra(), false), sample(n, seed).copy(extra(), true)].map(shape));
    expect(installLinearCallbackCopy()).toBe(true);
    const actual = cases.map(({ n, seed }) => [sample(n, seed).copy(), sample(n, seed).copy(extra(), false), sample(n, seed).copy(extra(), true)].map(shape));
    expect(actual).toEqual(expected);
    // The source manager is left as it was, and the copy's objects are its own.
    const src = sample(10, 1);
    const before = shape(src);
    const copy = src.copy();
    expect(shape(src)).toEqual(before);
    expect(copy.metadata).not.toBe(src.metadata);
    copy.addMetadata({ added: 1 });
    expect(src.metadata).not.toHaveProperty("added");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("streams the same messages metadata through a real graph as the library's own copy", async () => {
    const run = async () => {
      const model = new FakeListChatModel({ responses: ["one two three"] });
      const graph = new StateGraph(Annotation.Root({ ...MessagesAnnotation.spec }))
        .addNode("model_request", async (s) => ({ messages: [await model.invoke(s.messages)] }))
        .addEdge("__start__", "model_request")
        .compile();
      const out: unknown[] = [];
      const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`run_key_${i}`, i]));
      for await (const [mode, chunk] of await graph.stream({ messages: [new AIMessage("hi")] }, { streamMode: ["messages", "values"], metadata, tags: ["t1"] })) {
        if (mode === "messages") {
          const [, meta] = chunk as [unknown, Record<string, unknown>];
          out.push(Object.entries(meta).filter(([k]) => k !== "langgraph_checkpoint_ns" && k !== "checkpoint_ns"));
        }
      }
      return out;
    };
    uninstallLinearCallbackCopy();
    const expected = await run();
    installLinearCallbackCopy();
    const actual = await run();
    expect(expected.length).toBeGreaterThan(0);
    expect(actual).toEqual(expected);
    expect(JSON.stringify(actual)).toContain("run_key_19");
  });

  it("stays out when @langchain/core's copy is not the per-key one it replaces", () => {
    uninstallLinearCallbackCopy();
    const proto = CallbackManager.prototype as unknown as { copy: unknown };
    const library = proto.copy;
    proto.copy = function copy() {
      return new CallbackManager();
    };
    try {
      expect(installLinearCallbackCopy()).toBe(false);
    } finally {
      proto.copy = library;
    }
    expect(installLinearCallbackCopy()).toBe(true);
  });
});
