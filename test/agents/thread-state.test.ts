import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { mergeArtifacts, mergeSandbox, mergeTodos, mergeViewedImages, THREAD_STATE_FIELDS, ThreadState } from "../../src/agents/thread-state.js";

const img = (path: string) => ({ mime_type: "image/png", size: 3, actual_path: path });

describe("ThreadState reducers (agent-factory.md §5, AF-050)", () => {
  it("mergeArtifacts concatenates and de-duplicates keeping first-occurrence order; null keeps", () => {
    expect(mergeArtifacts(["a", "b"], ["b", "c", "a", "d"])).toEqual(["a", "b", "c", "d"]);
    expect(mergeArtifacts(null, ["x", "x"])).toEqual(["x"]);
    expect(mergeArtifacts(null, null)).toEqual([]);
    const current = ["a"];
    expect(mergeArtifacts(current, null)).toBe(current);
  });

  it("mergeTodos: null keeps, any list (even []) replaces", () => {
    const todos = [{ content: "s1", status: "pending" }];
    expect(mergeTodos(todos, null)).toBe(todos);
    expect(mergeTodos(todos, [])).toEqual([]);
    expect(mergeTodos(null, null)).toBeNull();
  });

  it("mergeSandbox: first value taken, same id kept, null keeps, conflicting ids rejected", () => {
    const s1 = { sandbox_id: "s1" };
    expect(mergeSandbox(null, s1)).toBe(s1);
    expect(mergeSandbox(s1, { sandbox_id: "s1" })).toBe(s1);
    expect(mergeSandbox(s1, null)).toBe(s1);
    expect(mergeSandbox(null, null)).toBeNull();
    expect(() => mergeSandbox(s1, { sandbox_id: "s2" })).toThrow("Conflicting sandbox state updates: 's1' != 's2'");
  });

  it("mergeViewedImages: {} clears, null keeps, otherwise a shallow merge where the update wins", () => {
    const current = { "/a.png": img("/h/a.png"), "/b.png": img("/h/b.png") };
    expect(mergeViewedImages(current, {})).toEqual({});
    expect(mergeViewedImages(current, null)).toBe(current);
    expect(mergeViewedImages(null, null)).toEqual({});
    expect(mergeViewedImages(current, { "/b.png": img("/h/b2.png"), "/c.png": img("/h/c.png") })).toEqual({
      "/a.png": img("/h/a.png"),
      "/b.png": img("/h/b2.png"),
      "/c.png": img("/h/c.png"),
    });
  });
});

describe("ThreadState schema in a graph", () => {
  it("declares the DeerFlow channels", () => {
    expect(THREAD_STATE_FIELDS).toEqual(["messages", "sandbox", "thread_data", "title", "artifacts", "todos", "uploaded_files", "viewed_images"]);
  });

  it("applies the reducers to node updates", async () => {
    const graph = new StateGraph(ThreadState)
      .addNode("one", () => ({ artifacts: ["/o/a.md", "/o/b.md"], viewed_images: { "/x.png": img("/h/x.png") }, title: "T1", messages: [new AIMessage({ id: "m", content: "v1" })] }))
      .addNode("two", () => ({ artifacts: ["/o/b.md", "/o/c.md"], viewed_images: {}, messages: [new AIMessage({ id: "m", content: "v2" })] }))
      .addEdge(START, "one")
      .addEdge("one", "two")
      .addEdge("two", END)
      .compile();
    const out = (await graph.invoke({ messages: [new HumanMessage("hi")] } as never)) as Record<string, unknown>;
    expect(out.artifacts).toEqual(["/o/a.md", "/o/b.md", "/o/c.md"]);
    expect(out.viewed_images).toEqual({});
    expect(out.title).toBe("T1");
    expect((out.messages as AIMessage[]).map((m) => m.content)).toEqual(["hi", "v2"]);
  });

  it("fails a superstep that writes two different sandbox ids", async () => {
    const graph = new StateGraph(ThreadState)
      .addNode("a", () => ({ sandbox: { sandbox_id: "s1" } }))
      .addNode("b", () => ({ sandbox: { sandbox_id: "s2" } }))
      .addEdge(START, "a")
      .addEdge(START, "b")
      .addEdge("a", END)
      .addEdge("b", END)
      .compile();
    await expect(graph.invoke({ messages: [] } as never)).rejects.toThrow("Conflicting sandbox state updates");
  });
});
