import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";

// Issue 47 item 6: the upstream message and feedback routes that answered 404 here, with upstream's shapes, and
// owner isolation on each (another user's ids are 404).
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let h: Harness;
let alice: Session;
let bob: Session;
let thread: string;
let first: string;
let second: string;

/** One finished turn of Alice's on `thread`; returns its run id. */
async function turn(text: string): Promise<string> {
  const res = await alice.fetch(`/threads/${thread}/runs/wait`, { json: { assistant_id: "lead_agent", input: { messages: [{ type: "human", content: text }] } } });
  expect(res.status).toBe(200);
  const runs = (await (await alice.fetch(`/threads/${thread}/runs`)).json()) as { run_id: string }[];
  return runs[0].run_id;
}

beforeAll(async () => {
  h = await startHarness("models:\n  - {name: s, use: \"deerflow-gateway:ScriptedChatModel\", model: s}\ntitle: {enabled: false}\nmemory: {enabled: false}\n", { authDisabled: false });
  alice = await signUp(h.url, "alice@example.com", "correct-horse-battery", "initialize");
  bob = await signUp(h.url, "bob@example.com", "correct-horse-battery");
  thread = (await (await alice.fetch("/threads", { json: {} })).json()).thread_id;
  first = await turn("one");
  second = await turn("two");
});
afterAll(async () => h.close());

const json = async (s: Session, p: string) => {
  const res = await s.fetch(p);
  return [res.status, await res.json()] as const;
};

describe("message routes", () => {
  it("GET /api/threads/{id}/messages lists the visible rows across runs, with cursors", async () => {
    const [status, rows] = await json(alice, `/api/threads/${thread}/messages`);
    expect(status).toBe(200);
    expect(rows.map((r: any) => [r.run_id, r.content.type, r.content.content])).toEqual([
      [first, "human", "one"], [first, "ai", "You said: one"], [second, "human", "two"], [second, "ai", "You said: two"],
    ]);
    expect((await json(alice, `/api/threads/${thread}/messages?limit=1`))[1].map((r: any) => r.content.content)).toEqual(["You said: two"]);
    expect((await json(alice, `/api/threads/${thread}/messages?after_seq=${rows[1].seq}&limit=1`))[1].map((r: any) => r.content.content)).toEqual(["two"]);
  });

  it("GET .../runs/{run_id}/messages and /api/runs/{run_id}/messages page one run's rows as {data, has_more}", async () => {
    for (const p of [`/api/threads/${thread}/runs/${first}/messages`, `/api/runs/${first}/messages`]) {
      const [status, page] = await json(alice, p);
      expect(status, p).toBe(200);
      expect(page.has_more).toBe(false);
      expect(page.data.map((r: any) => r.content.content)).toEqual(["one", "You said: one"]);
      const last = (await json(alice, `${p}?limit=1`))[1];
      expect([last.has_more, last.data.map((r: any) => r.content.content)]).toEqual([true, ["You said: one"]]);
      const forward = (await json(alice, `${p}?limit=1&after_seq=${page.data[0].seq}`))[1];
      expect([forward.has_more, forward.data.map((r: any) => r.content.content)]).toEqual([false, ["You said: one"]]);
    }
    expect((await alice.fetch(`/api/runs/${first}/messages?limit=500`)).status).toBe(422);
  });
});

describe("feedback routes", () => {
  it("counts a run's feedback, lists it by run id and deletes one by id", async () => {
    const put = await alice.fetch(`/api/threads/${thread}/runs/${second}/feedback`, { method: "PUT", json: { rating: -1, comment: "too short" } });
    const created = await put.json();
    expect((await json(alice, `/api/threads/${thread}/runs/${second}/feedback/stats`))[1]).toEqual({ run_id: second, total: 1, positive: 0, negative: 1 });
    expect((await json(alice, `/api/threads/${thread}/runs/${first}/feedback/stats`))[1]).toEqual({ run_id: first, total: 0, positive: 0, negative: 0 });
    const [status, listed] = await json(alice, `/api/runs/${second}/feedback`);
    expect([status, listed.map((f: any) => [f.feedback_id, f.rating, f.comment])]).toEqual([200, [[created.feedback_id, -1, "too short"]]]);
    expect((await alice.fetch(`/api/threads/${thread}/runs/${first}/feedback/${created.feedback_id}`, { method: "DELETE" })).status).toBe(404);
    const del = await alice.fetch(`/api/threads/${thread}/runs/${second}/feedback/${created.feedback_id}`, { method: "DELETE" });
    expect([del.status, await del.json()]).toEqual([200, { success: true }]);
    expect((await json(alice, `/api/threads/${thread}/runs/${second}/feedback/stats`))[1].total).toBe(0);
  });

  it("answers 404 to another user on every one of these routes", async () => {
    for (const p of [
      `/api/threads/${thread}/messages`, `/api/threads/${thread}/runs/${first}/messages`, `/api/runs/${first}/messages`,
      `/api/runs/${first}/feedback`, `/api/threads/${thread}/runs/${first}/feedback/stats`,
    ]) expect((await bob.fetch(p)).status, p).toBe(404);
    expect((await bob.fetch(`/api/threads/${thread}/runs/${first}/feedback/x`, { method: "DELETE" })).status).toBe(404);
    expect((await alice.fetch("/api/runs/no-such-run/messages")).status).toBe(404);
  });
});
