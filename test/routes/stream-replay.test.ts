import { afterEach, describe, expect, it } from "vitest";
import { buildTestApp, postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

const CONFIG = `models:\n  - name: slow\n    use: deerflow-gateway:ScriptedChatModel\n    model: slow\n    token_delay_ms: 80\n`;
const human = (content: string) => ({ messages: [{ role: "user", content }] });
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});


describe("stream replay with a small retention", () => {
  it("answers a join whose cursor was evicted with one gap frame (no id, no end) and leaves the run running", async () => {
    h = await startHarness(CONFIG, { queueMaxSize: 2 });
    await postJson(`${h.url}/threads`, { thread_id: "t-gap" });
    const res = await postJson(`${h.url}/threads/t-gap/runs`, { input: human(Array(40).fill("w").join(" ")), stream_mode: ["messages-tuple"] });
    const run = await res.json();
    let firstId = "";
    const live = await fetch(`${h.url}/threads/t-gap/runs/${run.run_id}/stream`, { headers: { "last-event-id": "-1" } });
    const reader = live.body!.getReader();
    let text = "";
    while (!firstId) {
      text += new TextDecoder().decode((await reader.read()).value);
      firstId = parseSse(text).frames[0]?.id ?? "";
    }
    await reader.cancel();
    // Wait (by polling, not a fixed sleep: the machine may be loaded) until newer events have pushed the first one
    // out of the 2-event buffer. A join that is not a gap streams live: read its first frame only.
    const firstFrameEvent = async () => {
      const res = await fetch(`${h!.url}/threads/t-gap/runs/${run.run_id}/stream`, { headers: { "last-event-id": firstId } });
      const r = res.body!.getReader();
      let buf = "";
      while (!parseSse(buf).frames.length) {
        const { value, done } = await r.read();
        if (done) break;
        buf += new TextDecoder().decode(value);
      }
      await r.cancel();
      return parseSse(buf).frames[0]?.event;
    };
    for (let i = 0; i < 200 && (await firstFrameEvent()) !== "gap"; i++) await new Promise((r) => setTimeout(r, 50));
    const gapRes = await fetch(`${h.url}/threads/t-gap/runs/${run.run_id}/stream`, { headers: { "last-event-id": firstId } });
    const body = await gapRes.text();
    const { frames } = parseSse(body);
    expect(frames).toHaveLength(1);
    expect(frames[0].event).toBe("gap");
    expect(frames[0].id).toBeUndefined();
    expect(frames[0].data).toMatchObject({ code: "stream_replay_gap", run_id: run.run_id, requested_event_id: firstId, recovery: "reload_durable_state" });
    expect(typeof frames[0].data.earliest_available_event_id).toBe("string");
    expect(body).not.toContain("event: end");
    expect((await (await fetch(`${h.url}/threads/t-gap/runs/${run.run_id}`)).json()).status).toBe("running");
    await fetch(`${h.url}/threads/t-gap/runs/${run.run_id}/cancel?wait=1`, { method: "POST" });
  });
});

describe("graceful shutdown and restart", () => {
  it("interrupts in-flight runs on close, keeps finished runs, and serves both after a restart", async () => {
    h = await startHarness(CONFIG);
    await postJson(`${h.url}/threads`, { thread_id: "t-drain" });
    await postJson(`${h.url}/threads`, { thread_id: "t-done" });
    const done = await (await postJson(`${h.url}/threads/t-done/runs/wait`, { input: human("quick") })).json();
    expect(done.messages).toHaveLength(2);
    const slow = await (await postJson(`${h.url}/threads/t-drain/runs`, { input: human(Array(100).fill("w").join(" ")) })).json();
    await until(async () => (await (await fetch(`${h!.url}/threads/t-drain/runs/${slow.run_id}`)).json()).status === "running");
    await h.app.close();
    const app = await buildTestApp();
    try {
      const slowAfter = (await app.inject({ url: `/threads/t-drain/runs/${slow.run_id}` })).json();
      expect(slowAfter.status).toBe("interrupted");
      const runs = (await app.inject({ url: "/threads/t-done/runs" })).json();
      expect(runs).toHaveLength(1);
      expect(runs[0].status).toBe("success");
      expect((await app.inject({ url: "/threads/t-done" })).json().status).toBe("idle");
    } finally {
      await app.close();
      await app.close();
    }
    h.app = app;
  });
});
