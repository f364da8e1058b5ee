import { afterEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse, readFramesUntil, type SseFrame } from "../support/sse.js";

// A run that ends early says so on its stream (an `error` frame before `end`) and leaves in its thread the answer it
// had streamed (docs/durable-runs.md, "An early end").
const config = `models:\n  - {name: slow, use: "deerflow-gateway:ScriptedChatModel", model: slow, token_delay_ms: 60}\ntitle: {enabled: false}\n`;
const question = "tell me everything about the old town of Porto and its bridges over the river";
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tokens = (frames: SseFrame[]) => frames.filter((f) => f.event === "messages").map((f) => f.data[0]);
const streamedText = (frames: SseFrame[]) => tokens(frames).map((m) => m.content).join("");

/** Starts a background run streaming tokens, waits for `count` tokens on its stream, then cancels it with `action`. */
async function cancelMidStream(harness: Harness, action: "interrupt" | "rollback") {
  const thread = (await (await postJson(`${harness.url}/threads`, {})).json()).thread_id;
  const run = await (await postJson(`${harness.url}/threads/${thread}/runs`, { input: { messages: [{ role: "user", content: question }] }, stream_mode: ["messages-tuple", "values"] })).json();
  const live = await readFramesUntil(await fetch(`${harness.url}/threads/${thread}/runs/${run.run_id}/stream`), (frames) => tokens(frames).length >= 4);
  expect(live.ended).toBe(false);
  const cancel = await fetch(`${harness.url}/threads/${thread}/runs/${run.run_id}/cancel?wait=1&action=${action}`, { method: "POST" });
  expect(cancel.status).toBe(204);
  await live.cancel();
  // A client reconnecting after the cancel replays the whole stream (retained for a minute).
  const frames = parseSse(await (await fetch(`${harness.url}/threads/${thread}/runs/${run.run_id}/stream`)).text()).frames;
  const state = await (await fetch(`${harness.url}/threads/${thread}/state`)).json();
  return { thread, run, frames, state };
}

describe("a run that ends early", () => {
  it("cancelled mid-stream: an error frame before end, and the thread keeps the partial answer", async () => {
    h = await startHarness(config);
    const { frames, state, run, thread } = await cancelMidStream(h, "interrupt");
    expect(frames.map((f) => f.event).slice(-2)).toEqual(["error", "end"]);
    expect(frames.at(-2)!.data).toEqual({ message: "Run cancelled by the user", name: "UserInterrupt", error: "UserInterrupt" });
    const text = streamedText(frames);
    expect(text.length).toBeGreaterThan(0);
    // The answer was cut short: the scripted model would have echoed the whole question.
    expect(text).not.toContain("bridges over the river");
    const messages = state.values.messages;
    expect(messages.map((m: any) => m.type)).toEqual(["human", "ai"]);
    expect(messages[1].content).toBe(text);
    expect(messages[1].id).toBe(tokens(frames)[0].id);
    expect(messages[1].response_metadata.finish_reason).toBe("interrupted");
    expect((await (await fetch(`${h.url}/threads/${thread}/runs/${run.run_id}`)).json()).status).toBe("interrupted");
    // The thread takes the next run at once, the partial answer in its history.
    const next = await (await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "go on" }] } })).json();
    expect(next.messages.map((m: any) => m.type)).toEqual(["human", "ai", "human", "ai"]);
  });

  it("rolled back mid-stream: an error frame before end, and nothing of the run in the thread", async () => {
    h = await startHarness(config);
    const { frames, state } = await cancelMidStream(h, "rollback");
    expect(frames.map((f) => f.event).slice(-2)).toEqual(["error", "end"]);
    expect(frames.at(-2)!.data.name).toBe("UserRollback");
    expect(state.values.messages ?? []).toEqual([]);
  });

  it("a run that finishes ends with a bare end, its answer whole", async () => {
    h = await startHarness(config);
    const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: "short one" }] }, stream_mode: ["messages-tuple"] });
    const frames = parseSse(await res.text()).frames;
    expect(frames.map((f) => f.event)).not.toContain("error");
    expect(frames.at(-1)!.event).toBe("end");
    expect(streamedText(frames)).toBe("You said: short one");
  });
});
