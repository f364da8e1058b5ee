import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 46: DeerFlow's `run_events` section. The fake OpenAI server reports 11 input and 7 output tokens per call.
const fake = useFakeOpenAI();
let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    `models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${fake.url}\n` +
      "run_events:\n  backend: memory\n  max_trace_content: 10240\n  track_token_usage: false\n",
  );
});
afterAll(async () => h.close());

describe("run_events", () => {
  it("memory keeps the event log out of the disk, and track_token_usage: false leaves the run's token counters at 0", async () => {
    const { thread_id: threadId } = await (await postJson(`${h.url}/threads`, {})).json();
    const res = await postJson(`${h.url}/threads/${threadId}/runs`, { input: { messages: [{ role: "user", content: "hello" }] } });
    const { run_id: runId } = await res.json();
    await (await fetch(`${h.url}/threads/${threadId}/runs/${runId}/join`)).json();
    const run = await (await fetch(`${h.url}/threads/${threadId}/runs/${runId}`)).json();
    expect(run).toMatchObject({ status: "success", total_tokens: 0, total_input_tokens: 0 });
    const events = await (await fetch(`${h.url}/api/threads/${threadId}/runs/${runId}/events`)).json();
    expect(JSON.stringify(events)).toContain("metadata");
    expect(existsSync(path.join(h.dir, ".deer-flow", "data", "run-events.sqlite"))).toBe(false);
    // Nor in the gateway database: `memory` keeps them in this process only.
    const db = new Database(path.join(h.dir, ".deer-flow", "data", "deerflow.sqlite"), { readonly: true });
    expect((db.prepare("SELECT COUNT(*) AS n FROM run_events WHERE run_id = ?").get(runId) as { n: number }).n).toBe(0);
    db.close();
    expect(events.some((e: { event_type: string }) => e.event_type === "run.end")).toBe(true);
  });
});
