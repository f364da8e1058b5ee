// DELETE /goal while a run is in flight answers 409 with upstream's detail (DeerFlow routers/threads.py
// clear_thread_goal: the run reserves the thread's checkpoint writes), and clears the goal once the run is over.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";

// A slow scripted model: 150 ms per token keeps the run in flight for seconds.
const CONFIG = "models:\n  - name: slow\n    use: deerflow-gateway:ScriptedChatModel\n    model: slow\n    token_delay_ms: 150\n";
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());

const send = async (method: string, p: string, body?: unknown) => {
  const res = await fetch(`${h.url}${p}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
};

describe("DELETE /goal during an active run", () => {
  it("answers 409 with upstream's detail while the run is in flight, and clears the goal after it", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "gd" });
    // max_continuations 0: the goal stays active but never continues the run, so the run is one slow turn.
    expect((await send("PUT", "/api/threads/gd/goal", { objective: "write it", max_continuations: 0 })).status).toBe(200);
    const started = await send("POST", "/api/threads/gd/runs", { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: "one two three four five six seven eight nine ten eleven twelve" }] } });
    expect(started.status).toBe(200);
    const runId = started.body.run_id;
    await until(async () => (await send("GET", `/api/threads/gd/runs/${runId}`)).body?.status === "running", 10_000);

    const refused = await send("DELETE", "/api/threads/gd/goal");
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe("Thread has a run in flight. Clear the goal after the run finishes.");
    // Nothing was cleared: the goal is still there.
    expect((await send("GET", "/api/threads/gd/goal")).body.goal).toMatchObject({ objective: "write it", status: "active" });

    await until(async () => (await send("GET", `/api/threads/gd/runs/${runId}`)).body?.status === "success", 30_000);
    expect(await send("DELETE", "/api/threads/gd/goal")).toEqual({ status: 200, body: { goal: null } });
    expect((await send("GET", "/api/threads/gd/goal")).body).toEqual({ goal: null });
  });

  it("is a 409 during a run even when the thread has no goal (upstream reserves first)", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "gn" });
    const started = await send("POST", "/api/threads/gn/runs", { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: "a b c d e f g h i j" }] } });
    await until(async () => (await send("GET", `/api/threads/gn/runs/${started.body.run_id}`)).body?.status === "running", 10_000);
    expect((await send("DELETE", "/api/threads/gn/goal")).status).toBe(409);
    await until(async () => (await send("GET", `/api/threads/gn/runs/${started.body.run_id}`)).body?.status === "success", 30_000);
  });
});
