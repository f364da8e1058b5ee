import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

// Issue 50 item 3: what a user is allowed (concurrent runs, daily tokens) and the feedback they give are the
// service's, not each process's: two real gateway processes on one PostgreSQL and one Redis, auth on, one user
// per test (so the tests pass in any order). Each process has its own DEER_FLOW_HOME, as on two machines: nothing
// may reach the other process through a local file (they share the session signing secret by environment).
const PASSWORD = "correct-horse-battery";
const secret = randomUUID() + randomUUID();
// Runs here cost about 700 tokens each: the scripted model counts the words of every message, system prompt included.
const QUOTA = 8_000;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-scale-limits-"));
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
  - name: slow
    use: deerflow-gateway:ScriptedChatModel
    model: slow
    token_delay_ms: 150
limits:
  max_concurrent_runs_per_user: 2
  daily_token_quota: ${QUOTA}
${sharedSections(db.url, testPrefix())}`,
  );
  const env = (name: string) => ({
    DEER_FLOW_CONFIG_PATH: config,
    DEER_FLOW_HOME: path.join(dir, name),
    DEER_FLOW_AGENTS_DIR: path.join(dir, `agents-${name}`),
    DEER_FLOW_AUTH_DISABLED: "",
    AUTH_JWT_SECRET: secret,
  });
  [a, b] = await Promise.all([startGateway(await freePort(), env("home-a")), startGateway(await freePort(), env("home-b"))]);
}, PROCESS_HOOK_MS);
afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The same browser (cookies) talking to another process. */
function on(g: GatewayProcess, session: Session): Session {
  const moved = new Session(g.url);
  for (const [k, v] of session.cookies) moved.cookies.set(k, v);
  return moved;
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
const human = (content: string, extra: Record<string, unknown> = {}) => ({ input: { messages: [{ type: "human", content }] }, ...extra });
let users = 0;
const newUser = () => signUp(a.url, `limits-${++users}-${Date.now()}@example.com`, PASSWORD);
const usage = async (s: Session) => (await s.fetch("/api/usage")).json();

describe("quotas across two processes", () => {
  it("a user with max_concurrent_runs_per_user runs in flight on A is refused on B, and admitted again once one ends", async () => {
    const alice = await newUser();
    const slow = human(words(20), { context: { model_name: "slow" } });
    const started = await Promise.all([alice.fetch("/runs", { json: slow }), alice.fetch("/runs", { json: slow })]);
    expect(started.map((r) => r.status)).toEqual([200, 200]);
    const [first] = await Promise.all(started.map((r) => r.json()));
    const aliceOnB = on(b, alice);
    expect((await usage(aliceOnB)).active_runs).toBe(2);
    const refused = await aliceOnB.fetch("/runs/wait", { json: human("one more") });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await refused.json()).detail).toMatch(/Too many concurrent runs: 2 of 2/);
    // Another user is not held back by Alice's runs.
    const bob = await newUser();
    expect((await on(b, bob).fetch("/runs/wait", { json: human("hi") })).status).toBe(200);
    await alice.fetch(`/threads/${first.thread_id}/runs/${first.run_id}/join`);
    await until(async () => (await usage(aliceOnB)).active_runs < 2);
    const admitted = await aliceOnB.fetch("/runs/wait", { json: human("now") });
    expect(admitted.status).toBe(200);
    expect((await admitted.json()).messages.at(-1).content).toBe("You said: now");
  });

  it("a user who spent the daily token quota on A is refused on B; B reports the tokens spent on A", async () => {
    const carol = await newUser();
    // Over 2 x 4,000 tokens (the scripted model counts words: the input, and its echo).
    const spent = await carol.fetch("/runs/wait", { json: human(words(4_000)) });
    expect(spent.status).toBe(200);
    const carolOnB = on(b, carol);
    await until(async () => (await usage(carolOnB)).today.total_tokens >= QUOTA);
    const report = await usage(carolOnB);
    expect(report.today).toMatchObject({ input_tokens: expect.any(Number), model_calls: 1 });
    expect(report.remaining_tokens).toBe(0);
    const refused = await carolOnB.fetch("/runs/wait", { json: human("one more") });
    expect(refused.status).toBe(429);
    expect((await refused.json()).detail).toMatch(/Daily token quota exhausted: \d+ of 8000 tokens used today/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("token additions from concurrent runs on both processes are all counted", async () => {
    const dave = await newUser();
    const davesOnB = on(b, dave);
    // 2 runs on each process at once: the cap (2) is per user, so take turns of 2 across both processes.
    for (let turn = 0; turn < 3; turn++) {
      const results = await Promise.all([dave.fetch("/runs/wait", { json: human("one two three") }), davesOnB.fetch("/runs/wait", { json: human("four five") })]);
      expect(await Promise.all(results.map(async (r) => `${r.status} ${r.status === 200 ? "" : await r.text()}`))).toEqual(["200 ", "200 "]);
    }
    // Each run's output is its echo: "You said: one two three" (5 words) and "You said: four five" (4).
    await until(async () => (await usage(dave)).today.model_calls === 6);
    const [onA, onB] = await Promise.all([usage(dave), usage(davesOnB)]);
    expect(onB.today).toEqual(onA.today);
    expect(onB.today).toMatchObject({ output_tokens: 3 * (5 + 4), model_calls: 6 });
    expect(onB.today.input_tokens).toBeGreaterThan(0);
  });
});

describe("run feedback across two processes", () => {
  it("feedback given on A is listed, counted, shown in the feed and deleted by id on B; gone on A after", async () => {
    const erin = await newUser();
    const thread = (await (await erin.fetch("/threads", { json: {} })).json()).thread_id;
    expect((await erin.fetch(`/threads/${thread}/runs/wait`, { json: human("rate me") })).status).toBe(200);
    const [run] = await (await erin.fetch(`/threads/${thread}/runs`)).json();
    const put = await erin.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback`, { method: "PUT", json: { rating: 1, comment: "good" } });
    expect(put.status).toBe(200);
    const created = await put.json();
    const erinOnB = on(b, erin);
    const listed = await (await erinOnB.fetch(`/api/runs/${run.run_id}/feedback`)).json();
    expect(listed.map((f: any) => [f.feedback_id, f.rating, f.comment])).toEqual([[created.feedback_id, 1, "good"]]);
    expect(await (await erinOnB.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback/stats`)).json()).toEqual({ run_id: run.run_id, total: 1, positive: 1, negative: 0 });
    const page = await (await erinOnB.fetch(`/api/threads/${thread}/messages/page`)).json();
    expect(page.data.filter((r: any) => r.feedback).map((r: any) => r.feedback)).toEqual([{ feedback_id: created.feedback_id, rating: 1, comment: "good" }]);
    // Replaced on B: same id, new rating; one feedback per user and run.
    const replaced = await (await erinOnB.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback`, { method: "PUT", json: { rating: -1 } })).json();
    expect([replaced.feedback_id, replaced.rating, replaced.comment]).toEqual([created.feedback_id, -1, null]);
    // Another user sees none of it, on either process.
    const frank = await newUser();
    expect((await on(b, frank).fetch(`/api/runs/${run.run_id}/feedback`)).status).toBe(404);
    expect((await erinOnB.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback/${created.feedback_id}`, { method: "DELETE" })).status).toBe(200);
    expect(await (await erin.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback`)).json()).toEqual([]);
    expect((await erin.fetch(`/api/threads/${thread}/runs/${run.run_id}/feedback/${created.feedback_id}`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("sign-in lockout across two processes", () => {
  it("five failed sign-ins spread over A and B lock the account on both; other accounts stay open", async () => {
    const email = `lockout-${Date.now()}@example.com`;
    await signUp(a.url, email, PASSWORD);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await new Session((i % 2 ? a : b).url).login(email, `wrong-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    // Locked everywhere, even for the right password.
    const [onA, onB] = await Promise.all([new Session(a.url).login(email, PASSWORD), new Session(b.url).login(email, PASSWORD)]);
    expect([onA.status, onB.status]).toEqual([429, 429]);
    expect(Number(onB.headers.get("retry-after"))).toBeGreaterThan(0);
    const other = `open-${Date.now()}@example.com`;
    await signUp(b.url, other, PASSWORD);
    expect((await new Session(a.url).login(other, PASSWORD)).status).toBe(200);
  });
});
