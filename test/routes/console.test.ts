// The operations console over HTTP (DeerFlow app/gateway/routers/console.py) on SQLite, two signed-in users: each sees
// only their own runs, threads, agents, tokens and spend; pagination, status filter, local-day buckets, pricing.
// The fake OpenAI server reports 11 input and 7 output tokens for every call.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { startHarness, type Harness } from "../support/harness.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
const fake = useFakeOpenAI();
let h: Harness;
let alice: Session;
let bob: Session;

// fake-gpt is priced (2 and 10 per million tokens, in EUR); the scripted model is not.
const CONFIG = (url: string) =>
  `models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\n` +
  "    pricing: {currency: eur, input_per_million: 2, output_per_million: 10}\n" +
  "  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n" +
  "title:\n  enabled: false\nagents_api:\n  enabled: true\n";
const RUN_COST = (11 * 2 + 7 * 10) / 1_000_000;

const json = async (s: Session, p: string) => {
  const res = await s.fetch(p);
  return { status: res.status, body: (await res.json()) as any };
};

/** Runs `text` on a new thread of `s` on `model` and waits for the outcome. */
async function runOn(s: Session, threadId: string, text: string, model = "fake-gpt"): Promise<string> {
  expect((await s.fetch("/api/threads", { json: { thread_id: threadId } })).status).toBe(200);
  const res = await s.fetch(`/api/threads/${threadId}/runs/wait`, { json: { assistant_id: "lead_agent", input: { messages: [{ role: "user", content: text }] }, context: { model_name: model } } });
  expect(res.status).toBe(200);
  const runs = (await json(s, `/api/threads/${threadId}/runs`)).body;
  return runs[0].run_id;
}

beforeAll(async () => {
  h = await startHarness(CONFIG(fake.url), { authDisabled: false });
  alice = await signUp(h.url, "alice@example.com", "correct-horse-1", "initialize");
  bob = await signUp(h.url, "bob@example.com", "correct-horse-2");
  for (let i = 0; i < 3; i++) await runOn(alice, `a-${i}`, `hello ${i}`);
  await runOn(alice, "a-fail", `!fail ${"x".repeat(400)}`, "scripted");
  await runOn(bob, "b-0", "bob's question");
  // An agent of Alice's only.
  expect((await alice.fetch("/api/agents", { json: { name: "helper", soul: "be brief" } })).status).toBe(201);
});
afterAll(async () => h?.close());

describe("GET /api/console/stats", () => {
  it("counts only the caller's runs, threads, agents and tokens, with the spend of priced runs", async () => {
    const a = (await json(alice, "/api/console/stats")).body;
    expect(a).toEqual({
      total_runs: 4, active_runs: 0, failed_runs: 1, total_threads: 4, total_agents: 1, total_tokens: 3 * 18,
      total_cost: Number((3 * RUN_COST).toFixed(6)), currency: "EUR",
    });
    const b = (await json(bob, "/api/console/stats")).body;
    expect(b).toEqual({ total_runs: 1, active_runs: 0, failed_runs: 0, total_threads: 1, total_agents: 0, total_tokens: 18, total_cost: RUN_COST, currency: "EUR" });
  });

  it("needs a signed-in user", async () => {
    expect((await fetch(`${h.url}/api/console/stats`)).status).toBe(401);
  });
});

describe("GET /api/console/runs", () => {
  it("lists the caller's runs newest first with thread, model, tokens, duration, cost and an error excerpt", async () => {
    const { body } = await json(alice, "/api/console/runs");
    expect(body.has_more).toBe(false);
    expect(body.runs.map((r: any) => r.thread_id)).toEqual(["a-fail", "a-2", "a-1", "a-0"]);
    const [failed, ok] = body.runs;
    expect(failed).toMatchObject({ status: "error", model_name: "scripted", cost: null, total_tokens: 0, assistant_id: "lead_agent" });
    expect(failed.error).toHaveLength(300);
    expect(ok).toMatchObject({ status: "success", model_name: "fake-gpt", total_tokens: 18, cost: RUN_COST, error: null, message_count: 2 });
    expect(ok.duration_seconds).toBeGreaterThanOrEqual(0);
    expect(Object.keys(ok).sort()).toEqual(["assistant_id", "cost", "created_at", "duration_seconds", "error", "message_count", "model_name", "run_id", "status", "thread_id", "thread_title", "total_tokens", "updated_at"]);
    // Bob sees his one run and none of Alice's.
    expect((await json(bob, "/api/console/runs")).body.runs.map((r: any) => r.thread_id)).toEqual(["b-0"]);
  });

  it("pages with limit/offset and has_more, and filters by status", async () => {
    const first = (await json(alice, "/api/console/runs?limit=3")).body;
    expect(first.runs).toHaveLength(3);
    expect(first.has_more).toBe(true);
    const second = (await json(alice, "/api/console/runs?limit=3&offset=3")).body;
    expect(second).toMatchObject({ has_more: false, runs: [{ thread_id: "a-0" }] });
    const errors = (await json(alice, "/api/console/runs?status=error")).body;
    expect(errors.runs.map((r: any) => r.thread_id)).toEqual(["a-fail"]);
  });

  it("refuses out-of-range parameters with 422", async () => {
    for (const q of ["limit=0", "limit=101", "offset=-1", "limit=abc"]) expect((await alice.fetch(`/api/console/runs?${q}`)).status).toBe(422);
  });
});

describe("GET /api/console/usage", () => {
  it("buckets the caller's tokens by local day (zero-filled) and by model, with spend", async () => {
    const { body } = await json(alice, "/api/console/usage?days=3");
    expect(body.days).toHaveLength(3);
    const today = new Date().toISOString().slice(0, 10);
    expect(body.days.at(-1)).toEqual({ date: today, total_tokens: 54, input_tokens: 33, output_tokens: 21, runs: 4, cost: Number((3 * RUN_COST).toFixed(6)) });
    expect(body.days[0]).toMatchObject({ total_tokens: 0, runs: 0, cost: 0 });
    expect(body).toMatchObject({ total_tokens: 54, total_runs: 4, total_cost: Number((3 * RUN_COST).toFixed(6)), currency: "EUR" });
    // The failed scripted run used no tokens: it has no model bucket.
    expect(body.by_model).toEqual({ "fake-gpt": { tokens: 54, runs: 3, cost: Number((3 * RUN_COST).toFixed(6)), input_tokens: 0, cache_read_tokens: 0 } });
    expect((await json(bob, "/api/console/usage")).body).toMatchObject({ total_tokens: 18, total_runs: 1 });
    expect((await json(bob, "/api/console/usage")).body.days).toHaveLength(14);
  });

  it("shifts day buckets by tz_offset_minutes and bounds days and the offset (422)", async () => {
    const ahead = (await json(alice, "/api/console/usage?days=1&tz_offset_minutes=840")).body;
    const local = new Date(Date.now() + 840 * 60_000).toISOString().slice(0, 10);
    expect(ahead.days.map((d: any) => d.date)).toEqual([local]);
    for (const q of ["days=0", "days=91", "tz_offset_minutes=841", "tz_offset_minutes=-841"]) expect((await alice.fetch(`/api/console/usage?${q}`)).status).toBe(422);
  });
});
