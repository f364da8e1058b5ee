// DeerFlow's run event catalog over HTTP (runtime/journal.py, runtime/events/catalog.py): a run's `run.*`, `llm.*`
// and `middleware:*` events are stored with the run and filtered by `event_types` (exact, or `prefix*`) on
// `GET /api/threads/{id}/runs/{run_id}/events`; another user's run is a 404.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";

vi.setConfig({ testTimeout: 60_000 });
let h: Harness;
let alice: Session;
let bob: Session;

beforeAll(async () => {
  h = await startHarness(
    [
      "models:\n  - {name: s, use: \"deerflow-gateway:ScriptedChatModel\", model: s}",
      "memory: {enabled: false}",
      "tool_groups:\n  - name: file:read",
      "tools:\n  - name: read_file\n    group: file:read\n    use: deerflow-gateway/sandbox:readFileTool",
      "",
    ].join("\n"),
    { authDisabled: false },
  );
  alice = await signUp(h.url, "alice@example.com", "correct-horse-battery", "initialize");
  bob = await signUp(h.url, "bob@example.com", "correct-horse-battery");
}, 120_000);
afterAll(async () => h?.close());

const json = async (s: Session, p: string) => {
  const res = await s.fetch(p);
  return { status: res.status, body: (await res.json()) as any };
};

/** Runs `content` on a new thread of `s` to completion; returns the thread and run ids. */
async function run(s: Session, content: string): Promise<{ threadId: string; runId: string }> {
  const { thread_id: threadId } = await (await s.fetch("/api/threads", { json: {} })).json();
  const res = await s.fetch(`/api/threads/${threadId}/runs/wait`, { json: { assistant_id: "lead_agent", input: { messages: [{ type: "human", content }] } } });
  expect(res.status).toBe(200);
  await res.text();
  const [r] = (await json(s, `/api/threads/${threadId}/runs`)).body;
  return { threadId, runId: r.run_id };
}

describe("run event catalog", () => {
  it("records run.start, llm.human.input, llm.ai.response with model, usage and latency, llm.tool.result, middleware:title and run.end", async () => {
    const { threadId, runId } = await run(alice, `!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/missing.txt", description: "peek" })}`);
    const base = `/api/threads/${threadId}/runs/${runId}/events`;
    const catalog = (await json(alice, `${base}?event_types=run.*,llm.*,middleware:*`)).body as any[];
    expect(catalog.map((e) => e.event_type)).toEqual(["run.start", "llm.human.input", "llm.ai.response", "middleware:title", "llm.tool.result", "llm.ai.response", "run.end"]);
    const seqs = catalog.map((e) => e.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    const [start, human, call, title, tool, answer, end] = catalog;
    expect(start).toMatchObject({ run_id: runId, category: "trace", content: { chain: "lead_agent" }, metadata: { caller: "lead_agent", thread_id: threadId, attempt: 1 } });
    expect(human).toMatchObject({ category: "message", content: { type: "human", content: expect.stringContaining("!call read_file") }, metadata: { caller: "lead_agent" } });
    expect(call).toMatchObject({ category: "message", content: { type: "ai", tool_calls: [{ name: "read_file" }] }, metadata: { caller: "lead_agent", model_name: "s", llm_call_index: 1 } });
    expect(call.metadata.latency_ms).toBeGreaterThanOrEqual(0);
    expect(call.metadata.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(tool).toMatchObject({ category: "message", content: { type: "tool", name: "read_file", content: expect.stringMatching(/^Error/) } });
    expect(answer.metadata).toMatchObject({ llm_call_index: 2, model_name: "s" });
    expect(title).toMatchObject({ category: "middleware", content: { name: "TitleMiddleware", action: "generate_title", changes: { title: expect.any(String) } } });
    const runJson = (await json(alice, `/api/threads/${threadId}/runs/${runId}`)).body;
    expect(end).toMatchObject({ category: "outputs", metadata: { status: "success" }, content: { status: "success", usage: { total_tokens: runJson.total_tokens, llm_call_count: 2 } } });
    expect(end.content.duration_ms).toBeGreaterThanOrEqual(0);

    // Exact filters as upstream; the cursor pages forward.
    expect((await json(alice, `${base}?event_types=run.end`)).body.map((e: any) => e.seq)).toEqual([end.seq]);
    expect((await json(alice, `${base}?event_types=llm.ai.response&after_seq=${call.seq}`)).body.map((e: any) => e.seq)).toEqual([answer.seq]);
  });

  it("records a failed run as run.error with the error and its type", async () => {
    const { threadId, runId } = await run(alice, "!fail provider exploded");
    const events = (await json(alice, `/api/threads/${threadId}/runs/${runId}/events?event_types=run.end,run.error,llm.error`)).body as any[];
    expect(events.map((e) => e.event_type)).toContain("run.error");
    const error = events.find((e) => e.event_type === "run.error");
    expect(error).toMatchObject({ category: "error", content: expect.stringContaining("provider exploded"), metadata: { status: "error" } });
    expect(events.some((e) => e.event_type === "run.end")).toBe(false);
  });

  it("answers 404 for another user's run events, as for a missing run", async () => {
    const { threadId, runId } = await run(alice, "hello");
    expect((await json(alice, `/api/threads/${threadId}/runs/${runId}/events?event_types=run.end`)).body).toHaveLength(1);
    const other = await json(bob, `/api/threads/${threadId}/runs/${runId}/events`);
    expect(other.status).toBe(404);
    expect(JSON.stringify(other.body)).not.toContain("run.start");
    expect((await json(bob, `/api/threads/${threadId}/runs/${runId}/events?event_types=run.end`)).status).toBe(404);
    // Bob's own thread does not open Alice's run either.
    const mine = await run(bob, "hi");
    expect((await json(bob, `/api/threads/${mine.threadId}/runs/${runId}/events`)).status).toBe(404);
  });
});
