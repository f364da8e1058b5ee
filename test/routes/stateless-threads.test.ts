// The thread of a stateless run (`POST /runs`, `/runs/wait`, `/runs/stream` without a thread in the path): created
// `busy` for the run under a new id, or idle like any thread when the request names a missing one (another request
// may use a named thread before this run is admitted). Cases from an adversarial review of that change.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { runTurns } from "../../src/runtime/runs/run-scheduler.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 20\n";
let h: Harness;
beforeAll(async () => void (h = await startHarness(CONFIG)));
afterAll(async () => h.close());
const say = (content: string) => ({ input: { messages: [{ role: "user", content }] } });
const long = Array(40).fill("w").join(" ");
const get = async (path: string) => (await fetch(`${h.url}${path}`)).json();
async function until(fn: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) if (await fn()) return true;
  return false;
}

/** Holds the next `runs.admit` on `threadId` until `release()`: another request can use the thread meanwhile. */
function holdAdmission(threadId: string): { release: () => void; restore: () => void } {
  const runs = h.app.deerflow.runs;
  const admit = runs.admit.bind(runs);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = false;
  runs.admit = async (input) => {
    if (!held && input.threadId === threadId) {
      held = true;
      await gate;
    }
    return admit(input);
  };
  return { release, restore: () => (runs.admit = admit) };
}

/** Starts a stateless run whose worker waits before its first step until `open()` (it stays pending). */
async function pendingRun(body: Record<string, unknown>): Promise<{ run: { run_id: string; thread_id: string }; open: () => void }> {
  let open!: () => void;
  const spy = vi.spyOn(runTurns, "turn").mockImplementationOnce(() => new Promise<void>((r) => (open = r)));
  const run = await (await postJson(`${h.url}/runs`, body)).json();
  spy.mockRestore();
  return { run, open };
}

describe("stateless run threads", () => {
  it("a new thread is busy while its run is pending, and idle when the run is rolled back before it starts", async () => {
    const { run, open } = await pendingRun(say("hi"));
    expect((await get(`/threads/${run.thread_id}`)).status).toBe("busy");
    expect((await fetch(`${h.url}/threads/${run.thread_id}/runs/${run.run_id}/cancel?action=rollback`, { method: "POST" })).status).toBe(202);
    open();
    expect(await until(async () => (await get(`/threads/${run.thread_id}/runs/${run.run_id}`)).status === "error")).toBe(true);
    expect(await until(async () => (await get(`/threads/${run.thread_id}`)).status === "idle")).toBe(true);
    expect((await fetch(`${h.url}/threads/${run.thread_id}/state`)).status).toBe(200);
    expect((await get(`/threads/${run.thread_id}/state`)).values.messages ?? []).toEqual([]);
  });

  it("a named missing thread rolled back before its run starts is left idle", async () => {
    const { run, open } = await pendingRun({ ...say("hi"), config: { configurable: { thread_id: "named-rollback" } } });
    expect((await fetch(`${h.url}/threads/named-rollback/runs/${run.run_id}/cancel?action=rollback`, { method: "POST" })).status).toBe(202);
    open();
    expect(await until(async () => (await get(`/threads/named-rollback/runs/${run.run_id}`)).status === "error")).toBe(true);
    expect(await until(async () => (await get("/threads/named-rollback")).status === "idle")).toBe(true);
  });

  it("a run on a named thread that another run used before its admission is busy while it runs, and its rollback keeps the other run's messages", async () => {
    const hold = holdAdmission("named-shared");
    try {
      const a = postJson(`${h.url}/runs`, { ...say(long), multitask_strategy: "enqueue", config: { configurable: { thread_id: "named-shared" } } });
      expect(await until(async () => (await fetch(`${h.url}/threads/named-shared`)).status === 200)).toBe(true);
      expect((await postJson(`${h.url}/threads/named-shared/runs/wait`, say("keep me"))).status).toBe(200);
      hold.release();
      const runA = await (await a).json();
      expect(await until(async () => (await get(`/threads/named-shared/runs/${runA.run_id}`)).status === "running")).toBe(true);
      expect((await get("/threads/named-shared")).status).toBe("busy");
      await fetch(`${h.url}/threads/named-shared/runs/${runA.run_id}/cancel?action=rollback&wait=1`, { method: "POST" });
      const state = await get("/threads/named-shared/state");
      expect(state.values.messages.map((m: { content: string }) => m.content)).toEqual(["keep me", expect.any(String)]);
    } finally {
      hold.restore();
    }
  });

  it("a 409 for a run on a named thread leaves the thread busy for the run in flight on it", async () => {
    const hold = holdAdmission("named-409");
    try {
      const a = postJson(`${h.url}/runs/wait`, { ...say("x"), config: { configurable: { thread_id: "named-409" } } });
      expect(await until(async () => (await fetch(`${h.url}/threads/named-409`)).status === 200)).toBe(true);
      const runB = await (await postJson(`${h.url}/threads/named-409/runs`, say(long))).json();
      expect(await until(async () => (await get(`/threads/named-409/runs/${runB.run_id}`)).status === "running")).toBe(true);
      hold.release();
      expect((await a).status).toBe(409);
      expect((await get("/threads/named-409")).status).toBe("busy");
      await fetch(`${h.url}/threads/named-409/runs/${runB.run_id}/join`);
      expect((await get("/threads/named-409")).status).toBe("idle");
    } finally {
      hold.restore();
    }
  });
});

describe("checkpoint reads of a stateless run", () => {
  it("a thread created for the run starts without a checkpoint query; a named existing thread is read and continued", async () => {
    const checkpointer = h.app.deerflow.persistence.checkpointer;
    const original = checkpointer.getTuple.bind(checkpointer);
    const reads: unknown[] = [];
    const spy = vi.spyOn(checkpointer, "getTuple").mockImplementation((config) => {
      reads.push(config.configurable?.thread_id);
      return original(config);
    });
    const contents = async (threadId: string) => ((await get(`/threads/${threadId}/state`)).values.messages as { content: string }[]).map((m) => m.content);
    try {
      const first = await (await postJson(`${h.url}/runs`, say("first"))).json();
      // Run status comes from the run store: polling it reads no checkpoint.
      expect(await until(async () => (await get(`/threads/${first.thread_id}/runs/${first.run_id}`)).status === "success")).toBe(true);
      expect(reads).not.toContain(first.thread_id);
      expect(await contents(first.thread_id)).toEqual(["first", "You said: first"]);
      // The same thread named by the next stateless run: its history is read and the run continues it.
      const second = await (await postJson(`${h.url}/runs`, { ...say("second"), config: { configurable: { thread_id: first.thread_id } } })).json();
      expect(await until(async () => (await get(`/threads/${first.thread_id}/runs/${second.run_id}`)).status === "success")).toBe(true);
      expect(reads).toContain(first.thread_id);
      expect(await contents(first.thread_id)).toEqual(["first", "You said: first", "second", "You said: second"]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("POST /threads on a thread that has a run", () => {
  it("returns the thread as it is: no empty checkpoint beside the run's own (one root in the history)", async () => {
    const { run, open } = await pendingRun(say("hello"));
    const created = await postJson(`${h.url}/threads`, { thread_id: run.thread_id });
    expect(created.status).toBe(200);
    open();
    expect(await until(async () => (await get(`/threads/${run.thread_id}/runs/${run.run_id}`)).status === "success")).toBe(true);
    const history = (await (await postJson(`${h.url}/threads/${run.thread_id}/history`, { limit: 20 })).json()) as { parent_checkpoint: unknown; values: { messages?: unknown[] } }[];
    expect(history.filter((s) => !s.parent_checkpoint)).toHaveLength(1);
    expect(history[0]!.values.messages).toHaveLength(2);
  });

  it("a new thread still starts with its empty checkpoint", async () => {
    const created = await (await postJson(`${h.url}/threads`, {})).json();
    const history = await (await postJson(`${h.url}/threads/${created.thread_id}/history`, {})).json();
    expect(history).toHaveLength(1);
    expect(history[0].metadata).toMatchObject({ source: "input", step: -1 });
  });
});
