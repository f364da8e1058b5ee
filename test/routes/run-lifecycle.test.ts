import { afterEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const slowConfig = (delay: number) => `models:\n  - name: slow\n    use: deerflow-gateway:ScriptedChatModel\n    model: slow\n    token_delay_ms: ${delay}\n`;
const human = (content: string) => ({ messages: [{ role: "user", content }] });
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function runStatus(harness: Harness, threadId: string, runId: string): Promise<string> {
  return (await (await fetch(`${harness.url}/threads/${threadId}/runs/${runId}`)).json()).status;
}

describe("run lifecycle over a real socket", () => {
  it("sends heartbeat comments while a run is silent, never as events", async () => {
    h = await startHarness(slowConfig(120), { heartbeatMs: 50 });
    const res = await postJson(`${h.url}/runs/stream`, { input: human("one two three") });
    const text = await res.text();
    expect(text.match(/^: heartbeat\n\n/gm)?.length ?? 0).toBeGreaterThanOrEqual(2);
    const { frames } = parseSse(text);
    expect(frames.every((f) => f.event !== "heartbeat")).toBe(true);
    expect(frames.at(-1)!.event).toBe("end");
  });

  it("cancels the run when the client disconnects and on_disconnect is cancel (the default)", async () => {
    h = await startHarness(slowConfig(100));
    const controller = new AbortController();
    const res = await postJson(`${h.url}/runs/stream`, { input: human(Array(50).fill("word").join(" ")) }, {});
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const meta = parseSse(first).frames[0].data;
    await reader.cancel();
    controller.abort();
    const deadline = Date.now() + 5000;
    let status = "";
    while (Date.now() < deadline && (status = await runStatus(h, meta.thread_id, meta.run_id)) !== "interrupted") await new Promise((r) => setTimeout(r, 50));
    expect(status).toBe("interrupted");
    expect((await (await fetch(`${h.url}/threads/${meta.thread_id}`)).json()).status).toBe("idle");
  });

  it("keeps the run going after a disconnect when on_disconnect is continue", async () => {
    h = await startHarness(slowConfig(30));
    const res = await postJson(`${h.url}/runs/stream`, { input: human("a b c d e f"), on_disconnect: "continue" });
    const reader = res.body!.getReader();
    const meta = parseSse(new TextDecoder().decode((await reader.read()).value)).frames[0].data;
    await reader.cancel();
    const deadline = Date.now() + 5000;
    let status = "";
    while (Date.now() < deadline && (status = await runStatus(h, meta.thread_id, meta.run_id)) !== "success") await new Promise((r) => setTimeout(r, 50));
    expect(status).toBe("success");
  });

  it("rejects a second run on a busy thread with 409", async () => {
    h = await startHarness(slowConfig(50));
    await postJson(`${h.url}/threads`, { thread_id: "busy" });
    const first = await postJson(`${h.url}/threads/busy/runs/stream`, { input: human("a b c d e f g h") });
    const reader = first.body!.getReader();
    await reader.read();
    const second = await postJson(`${h.url}/threads/busy/runs/stream`, { input: human("again") });
    expect(second.status).toBe(409);
    expect(await second.json()).toEqual({ detail: "Thread busy already has an active run" });
    while (!(await reader.read()).done);
  });

  it("keeps threads and checkpoints in SQLite under DEER_FLOW_HOME across an app restart", async () => {
    h = await startHarness(slowConfig(0));
    await postJson(`${h.url}/threads`, { thread_id: "durable", metadata: { a: 1, user_id: "evil" } });
    await (await postJson(`${h.url}/threads/durable/runs/stream`, { input: human("remember me") })).text();
    const before = await (await fetch(`${h.url}/threads/durable/state`)).json();
    await h.app.close();
    const { buildTestApp } = await import("../support/harness.js");
    const app = await buildTestApp();
    try {
      const state = (await app.inject({ method: "GET", url: "/threads/durable/state" })).json();
      expect(state.values.messages.map((m: any) => m.content)).toEqual(["remember me", "You said: remember me"]);
      expect(state.checkpoint_id).toBe(before.checkpoint_id);
      expect(state.checkpoint).toMatchObject({ thread_id: "durable", checkpoint_ns: "", checkpoint_id: before.checkpoint_id });
      const thread = (await app.inject({ method: "GET", url: "/api/threads/durable" })).json();
      expect(thread).toMatchObject({ thread_id: "durable", status: "idle", metadata: { a: 1 } });
      expect(thread.values.messages).toHaveLength(2);
    } finally {
      await app.close();
    }
    // The harness closes its (already closed) app again: make that a no-op.
    h.app = app;
  });
});
