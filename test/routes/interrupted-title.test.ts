import { afterEach, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";

// An interrupted first turn still gets a title, derived locally from the user's input.
const slowConfig = (titleEnabled = true) =>
  `models:\n  - {name: slow, use: "deerflow-gateway:ScriptedChatModel", model: slow, token_delay_ms: 200}\ntitle: {enabled: ${titleEnabled}}\n`;
const question = "Plan a three day walking tour of the old town of Porto with food stops along the way";
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Starts a background run on a new thread, waits until it runs, then cancels it with `action`; returns the thread. */
async function interruptedRun(harness: Harness, action: "interrupt" | "rollback", seedTitle?: string): Promise<any> {
  const thread = (await (await postJson(`${harness.url}/threads`, {})).json()).thread_id;
  if (seedTitle) expect((await postJson(`${harness.url}/threads/${thread}/state`, { values: { title: seedTitle } })).status).toBe(200);
  const run = await (await postJson(`${harness.url}/threads/${thread}/runs`, { input: { messages: [{ role: "user", content: question }] } })).json();
  await until(async () => (await (await fetch(`${harness.url}/threads/${thread}/runs/${run.run_id}`)).json()).status === "running");
  const cancel = await fetch(`${harness.url}/threads/${thread}/runs/${run.run_id}/cancel?wait=1&action=${action}`, { method: "POST" });
  expect(cancel.status).toBe(204);
  return (await fetch(`${harness.url}/threads/${thread}`)).json();
}

describe("title of an interrupted first turn (gateway.md §3.5)", () => {
  it("names the thread after the user's message when the run is interrupted before the model answered", async () => {
    h = await startHarness(slowConfig());
    const thread = await interruptedRun(h, "interrupt");
    expect(thread.values.title).toBe("Plan a three day walking tour of the old town of P...");
  });

  it("keeps an existing title, and writes none when titles are off or the run was rolled back", async () => {
    h = await startHarness(slowConfig());
    expect((await interruptedRun(h, "interrupt", "My trip")).values.title).toBe("My trip");
    expect((await interruptedRun(h, "rollback")).values.title ?? null).toBeNull();
    h.writeConfig(slowConfig(false));
    expect((await interruptedRun(h, "interrupt")).values.title ?? null).toBeNull();
  });
});
