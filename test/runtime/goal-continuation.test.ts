// A thread goal advances over HTTP (DeerFlow runtime/goal.py + worker._prepare_goal_continuation_input): after each
// turn the evaluator (the scripted model's deterministic verdicts) judges the goal; the run continues with hidden
// turns while it may, and the counters and stand-down reason the app shows move.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

const send = async (method: string, p: string, body?: unknown) => {
  const res = await fetch(`${h.url}${p}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};
const chat = async (threadId: string, text: string) => {
  const res = await postJson(`${h.url}/api/threads/${threadId}/runs/wait`, { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: text }] } });
  expect(res.status).toBe(200);
  return res.json() as Promise<any>;
};
const visibleTexts = (state: any) => state.values.messages.filter((m: any) => !m.additional_kwargs?.hide_from_ui).map((m: any) => `${m.type}: ${m.content}`);

describe("goals that advance", () => {
  it("continues the run twice for an unmet goal, then stops at max_continuations", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "g1" });
    const set = await send("PUT", "/api/threads/g1/goal", { objective: "write the report", max_continuations: 2 });
    expect(set.body.goal).toMatchObject({ status: "active", continuation_count: 0, max_continuations: 2, max_no_progress_continuations: 2 });
    await chat("g1", "start the report");
    const { goal } = (await send("GET", "/api/threads/g1/goal")).body;
    expect(goal).toMatchObject({ status: "active", continuation_count: 2, max_continuations: 2 });
    expect(goal.last_evaluation).toMatchObject({ satisfied: false, blocker: "goal_not_met_yet", stand_down_reason: "max_continuations_reached" });
    const state = (await send("GET", "/api/threads/g1/state")).body;
    const hidden = state.values.messages.filter((m: any) => m.additional_kwargs?.deerflow_goal_continuation);
    expect(hidden).toHaveLength(2);
    expect(hidden[0].content).toContain("Active goal: write the report");
    // One run did all three turns; the user sees their message and three replies.
    expect((await send("GET", "/api/threads/g1/runs")).body).toHaveLength(1);
    expect(visibleTexts(state).filter((t: string) => t.startsWith("ai"))).toHaveLength(3);
  });

  it("stops when the evidence stops changing (no_progress_detected), and clears a met goal", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "g2" });
    await send("PUT", "/api/threads/g2/goal", { objective: "finish" });
    await chat("g2", "go");
    const { goal } = (await send("GET", "/api/threads/g2/goal")).body;
    // Turn 1 and the first continuation give new replies; the next two repeat the same echo: two repeats stop it.
    expect(goal).toMatchObject({ continuation_count: 3, no_progress_count: 2, max_continuations: 8 });
    expect(goal.last_evaluation.stand_down_reason).toBe("no_progress_detected");

    await send("PUT", "/api/threads/g2/goal", { objective: "finish" });
    await chat("g2", "GOAL MET");
    expect((await send("GET", "/api/threads/g2/goal")).body).toEqual({ goal: null });
    expect((await send("GET", "/api/threads/g2/state")).body.values.goal ?? null).toBeNull();
  });

  it("stands down on a blocker other than goal_not_met_yet, and bounds max_continuations as upstream", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "g3" });
    expect((await send("PUT", "/api/threads/g3/goal", { objective: "x", max_continuations: 15 })).status).toBe(422);
    expect((await send("PUT", "/api/threads/g3/goal", { objective: "x", max_continuations: -1 })).status).toBe(422);
    expect((await send("PUT", "/api/threads/g3/goal", { objective: "x" })).body.goal.max_continuations).toBe(8);
    await chat("g3", "GOAL BLOCKED");
    const { goal } = (await send("GET", "/api/threads/g3/goal")).body;
    expect(goal).toMatchObject({ continuation_count: 0, last_evaluation: { blocker: "needs_user_input", stand_down_reason: "blocked:needs_user_input" } });
  });
});
