import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import {
  mergeArtifacts, mergeDelegations, mergeGoal, mergePromoted, mergeSandbox, mergeSkillContext, mergeTodos, mergeViewedImages, THREAD_STATE_FIELDS, ThreadState,
} from "../../src/agents/thread-state.js";

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

  it("mergeSandbox: {} + {} stays {} (AF-050f)", () => {
    expect(mergeSandbox({} as never, {} as never)).toEqual({});
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
    expect(THREAD_STATE_FIELDS).toEqual([
      "messages", "sandbox", "thread_data", "title", "artifacts", "todos", "goal", "uploaded_files", "viewed_images", "promoted", "delegations",
      "skill_context", "summary_text", "background_tasks",
    ]);
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

describe("ThreadState reducers: goal, promoted, delegations, skill_context (agent-factory.md §5, AF-051)", () => {
  it("mergeGoal: null keeps, any value replaces", () => {
    const goal = { objective: "ship" };
    expect(mergeGoal(goal, null)).toBe(goal);
    expect(mergeGoal(goal, { objective: "test" })).toEqual({ objective: "test" });
    expect(mergeGoal(null, undefined)).toBeNull();
  });

  it("mergePromoted: empty keeps, new hash replaces with de-duplicated names, same hash unions in order", () => {
    const cur = { catalog_hash: "h1", names: ["a", "b"] };
    expect(mergePromoted(cur, null)).toBe(cur);
    expect(mergePromoted(cur, { catalog_hash: "h1", names: [] })).toBe(cur);
    expect(mergePromoted(cur, { catalog_hash: "h2", names: ["c", "c"] })).toEqual({ catalog_hash: "h2", names: ["c"] });
    expect(mergePromoted(cur, { catalog_hash: "h1", names: ["b", "c"] })).toEqual({ catalog_hash: "h1", names: ["a", "b", "c"] });
    expect(mergePromoted(null, { catalog_hash: "h", names: ["x", "x", "y"] })).toEqual({ catalog_hash: "h", names: ["x", "y"] });
  });

  it("mergeDelegations: a terminal status is never replaced by a non-terminal one (AF-051a)", () => {
    const done = { id: "a", status: "completed" };
    expect(mergeDelegations([done], [{ id: "a", status: "in_progress" }])).toEqual([done]);
  });

  it("mergeDelegations: latest wins otherwise, keeping the first created_at and an existing run_id, first-seen order", () => {
    const merged = mergeDelegations(
      [{ id: "a", status: "pending", created_at: 1, run_id: "r1" }, { id: "b", status: "pending" }],
      [{ id: "b", status: "completed" }, { id: "a", status: "in_progress", created_at: 9, run_id: "r2" }, { id: "c", status: "pending" }],
    );
    expect(merged).toEqual([{ id: "a", status: "in_progress", created_at: 1, run_id: "r1" }, { id: "b", status: "completed" }, { id: "c", status: "pending" }]);
  });

  it("mergeDelegations: caps at 50, keeping the newest (AF-051b)", () => {
    const fifty = Array.from({ length: 50 }, (_, i) => ({ id: `call_${i}`, status: "completed" }));
    const merged = mergeDelegations(fifty, [{ id: "call_new", status: "pending" }]);
    expect(merged).toHaveLength(50);
    expect(merged[0].id).toBe("call_1");
    expect(merged.at(-1)!.id).toBe("call_new");
  });

  it("mergeSkillContext: de-duplicates by path moving re-reads to the end, caps at 8 (AF-051c)", () => {
    const entry = (i: number | string, description = `skill ${i}`) => ({ name: `s${i}`, path: `/skills/s${i}/SKILL.md`, description, loaded_at: 1 });
    const eight = Array.from({ length: 8 }, (_, i) => entry(i));
    const merged = mergeSkillContext(eight, [entry(0, "refreshed"), entry("new")]);
    expect(merged).toHaveLength(8);
    expect(merged.map((e) => e.name)).not.toContain("s1");
    expect(merged.slice(-2).map((e) => e.name)).toEqual(["s0", "snew"]);
    expect(merged.at(-2)!.description).toBe("refreshed");
  });

  it("mergeSkillContext: normalizes legacy entries (content dropped, description '', loaded_at 0) (AF-051d)", () => {
    expect(mergeSkillContext([{ name: "legacy", path: "/p", content: "# body" }], null)).toEqual([{ name: "legacy", path: "/p", description: "", loaded_at: 0 }]);
    const long = mergeSkillContext(null, [{ name: "x", path: "/x", description: `a \n\n b ${"y".repeat(600)}`, loaded_at: 1.5 }])[0];
    expect(long.description.startsWith("a b ")).toBe(true);
    expect(long.description).toHaveLength(500);
    expect(long.loaded_at).toBe(0);
  });

  it("applies the new channels' reducers in a graph, and last-write channels keep their value when not written", async () => {
    const graph = new StateGraph(ThreadState)
      .addNode("one", () => ({ delegations: [{ id: "t1", status: "completed" }], summary_text: "S1", goal: { g: 1 }, promoted: { catalog_hash: "h", names: ["a"] } }))
      .addNode("two", () => ({ delegations: [{ id: "t1", status: "running" }, { id: "t2", status: "running" }], promoted: { catalog_hash: "h", names: ["b"] }, background_tasks: [{ id: "bg" }] }))
      .addEdge(START, "one")
      .addEdge("one", "two")
      .addEdge("two", END)
      .compile();
    const out = (await graph.invoke({ messages: [] } as never)) as Record<string, unknown>;
    expect(out.delegations).toEqual([{ id: "t1", status: "completed" }, { id: "t2", status: "running" }]);
    expect(out.summary_text).toBe("S1");
    expect(out.goal).toEqual({ g: 1 });
    expect(out.promoted).toEqual({ catalog_hash: "h", names: ["a", "b"] });
    expect(out.background_tasks).toEqual([{ id: "bg" }]);
  });
});
