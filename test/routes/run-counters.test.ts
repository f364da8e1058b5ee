import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// The Run JSON carries DeerFlow's counters (token totals by caller, model calls, messages added,
// stop reason). The fake OpenAI server reports 11 input and 7 output tokens for every call.
const fake = useFakeOpenAI();
let h: Harness;

const CONFIG = (url: string) =>
  `models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\n` +
  // A title written by the model: a middleware call, booked apart from the lead agent's.
  "title:\n  enabled: true\n  model_name: fake-gpt\n" +
  "tools:\n  - name: ls\n    group: file:read\n    use: deerflow.sandbox.tools:ls_tool\nloop_detection:\n  enabled: true\n";

beforeAll(async () => {
  h = await startHarness(CONFIG(fake.url));
});
afterAll(async () => {
  await h.close();
});

const run = async (threadId: string, text: string) => {
  const res = await postJson(`${h.url}/threads/${threadId}/runs`, { input: { messages: [{ role: "user", content: text }] } });
  expect(res.status).toBe(200);
  const { run_id } = await res.json();
  await (await fetch(`${h.url}/threads/${threadId}/runs/${run_id}/join`)).json();
  return (await (await fetch(`${h.url}/threads/${threadId}/runs/${run_id}`)).json()) as Record<string, unknown>;
};

describe("Run JSON counters", () => {
  it("books each model call's tokens by caller, counts the calls and the messages the run added", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "counted" });
    const first = await run("counted", "hello there");
    // Two calls: the answer (lead agent) and the title (middleware:title).
    expect(first).toMatchObject({
      status: "success",
      llm_call_count: 2,
      total_input_tokens: 22,
      total_output_tokens: 14,
      total_tokens: 36,
      lead_agent_tokens: 18,
      middleware_tokens: 18,
      subagent_tokens: 0,
      message_count: 2,
      stop_reason: null,
    });
    // A second turn: no new title, one call; the two new messages only.
    const second = await run("counted", "again");
    expect(second).toMatchObject({ llm_call_count: 1, total_tokens: 18, lead_agent_tokens: 18, middleware_tokens: 0, message_count: 2 });
    // Listed runs carry the stored counters too.
    const listed = (await (await fetch(`${h.url}/threads/counted/runs`)).json()) as Record<string, unknown>[];
    expect(listed.find((r) => r.run_id === first.run_id)).toMatchObject({ total_tokens: 36, llm_call_count: 2 });
  });

  it("records why a guard middleware stopped the run (loop detection: loop_capped)", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "looping" });
    let n = 0;
    fake.respond = (body) => (body.tools?.length ? { toolCalls: [{ name: "ls", args: { path: "/mnt/user-data" }, id: `call-${n++}` }] } : { content: "title" });
    const looped = await run("looping", "list the files forever");
    expect(looped.stop_reason).toBe("loop_capped");
    expect(looped.llm_call_count as number).toBeGreaterThan(2);
  });

  it("answers all-zero counters for a run that has not finished", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "pending-counters" });
    fake.respond = () => ({ content: "slow", delayMs: 300 });
    const res = await postJson(`${h.url}/threads/pending-counters/runs`, { input: { messages: [{ role: "user", content: "wait" }] } });
    const created = (await res.json()) as Record<string, unknown>;
    expect(created).toMatchObject({ total_tokens: 0, llm_call_count: 0, message_count: 0, stop_reason: null });
    await (await fetch(`${h.url}/threads/pending-counters/runs/${created.run_id}/join`)).json();
  });
});
