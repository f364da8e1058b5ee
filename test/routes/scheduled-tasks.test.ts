import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { signUp } from "../support/auth-client.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { until } from "../support/wait.js";

// Scheduled tasks over HTTP with an injected clock: the poller runs every 10 ms and "now" moves only when the
// test moves it, so a task due "next minute" fires when the test says the minute has come.
const fake = useFakeOpenAI();
const SCRIPTED = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const schedulerYaml = (extra = "") => `scheduler:\n  enabled: true\n${extra}`;

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A harness whose scheduler clock is `clock.now` (mutable). */
async function start(yaml: string, authDisabled = true) {
  const clock = { now: new Date("2030-01-07T08:00:30.000Z") };
  h = await startHarness(yaml, { authDisabled, scheduler: { now: () => clock.now, pollMs: 10 } });
  return clock;
}

async function call(path: string, init: { method?: string; json?: unknown } = {}) {
  const res = await fetch(`${h!.url}${path}`, {
    method: init.method ?? (init.json === undefined ? "GET" : "POST"),
    headers: init.json === undefined ? {} : { "content-type": "application/json" },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const everyMinute = { title: "Digest", prompt: "hello scheduler", schedule_type: "cron", schedule_spec: { cron: "* * * * *" }, timezone: "Europe/Berlin" };

describe("scheduled tasks over HTTP", () => {
  it("fires a cron task once per due minute on its own thread; trigger, pause, resume and delete work", async () => {
    const clock = await start(SCRIPTED + schedulerYaml());
    const created = await call("/api/scheduled-tasks", { json: everyMinute });
    expect(created.status).toBe(200);
    const task = created.body;
    expect(task).toMatchObject({ title: "Digest", status: "enabled", schedule_type: "cron", schedule_spec: { cron: "* * * * *" }, timezone: "Europe/Berlin", next_run_at: "2030-01-07T08:01:00.000Z", run_count: 0, context_mode: "fresh_thread_per_run", thread_id: null });
    expect(task.id).toMatch(/^task-/);
    const runs = async () => (await call(`/api/scheduled-tasks/${task.id}/runs`)).body as Record<string, any>[];

    clock.now = new Date("2030-01-07T08:01:02.000Z");
    await until(async () => (await runs()).some((r) => r.status === "success"));
    clock.now = new Date("2030-01-07T08:02:01.000Z");
    await until(async () => (await runs()).filter((r) => r.status === "success").length === 2);
    const fired = await runs();
    // One run per due minute, each on a fresh thread, never twice.
    expect(fired.map((r) => r.scheduled_for).sort()).toEqual(["2030-01-07T08:01:00.000Z", "2030-01-07T08:02:00.000Z"]);
    expect(new Set(fired.map((r) => r.thread_id)).size).toBe(2);
    expect(fired.every((r) => r.trigger === "scheduled" && r.run_id)).toBe(true);
    // The run is a real run on its thread: the prompt went to the agent, which answered.
    const first = fired.find((r) => r.scheduled_for.startsWith("2030-01-07T08:01"))!;
    const state = await call(`/threads/${first.thread_id}/state`);
    expect(JSON.stringify(state.body.values.messages)).toContain("hello scheduler");
    const run = await call(`/threads/${first.thread_id}/runs/${first.run_id}`);
    expect(run.body.metadata).toMatchObject({ scheduled_task_id: task.id, scheduled_trigger: "scheduled" });
    expect((await call(`/api/scheduled-tasks/${task.id}`)).body).toMatchObject({ run_count: 2, next_run_at: "2030-01-07T08:03:00.000Z", last_run_id: fired[0].run_id });

    expect(await call(`/api/scheduled-tasks/${task.id}/trigger`, { json: {} })).toEqual({ status: 200, body: { id: task.id, triggered: true } });
    await until(async () => (await runs()).some((r) => r.trigger === "manual" && r.status === "success"));

    expect((await call(`/api/scheduled-tasks/${task.id}/pause`, { json: {} })).body.status).toBe("paused");
    // A canary due at the same minute proves the poller ran past the paused task without firing it.
    const canary = (await call("/api/scheduled-tasks", { json: { ...everyMinute, title: "canary" } })).body;
    clock.now = new Date("2030-01-07T08:03:01.000Z");
    await until(async () => (await call(`/api/scheduled-tasks/${canary.id}`)).body.run_count === 1);
    expect((await runs()).length).toBe(3);
    // Resumed, the missed minute fires once (upstream: a due task fires once on the next poll).
    expect((await call(`/api/scheduled-tasks/${task.id}/resume`, { json: {} })).body.status).toBe("enabled");
    await until(async () => (await runs()).length === 4);

    expect(await call(`/api/scheduled-tasks/${task.id}`, { method: "DELETE" })).toEqual({ status: 200, body: { id: task.id, deleted: true } });
    expect((await call(`/api/scheduled-tasks/${task.id}`)).status).toBe(404);
    expect((await call(`/api/scheduled-tasks/${task.id}/runs`)).status).toBe(404);
    expect((await call("/api/scheduled-tasks")).body.map((t: { id: string }) => t.id)).toEqual([canary.id]);
  });

  it("skips a firing whose previous run is still active and records the skip", async () => {
    fake.respond = () => ({ content: "slow answer", delayMs: 60_000 });
    const clock = await start(`models:\n  - {name: s, use: deerflow-gateway:ScriptedChatModel, model: s}\n  - {name: slow, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}", max_retries: 0}\n` + schedulerYaml());
    const task = (await call("/api/scheduled-tasks", { json: { ...everyMinute, model_name: "slow" } })).body;
    expect(task.model_name).toBe("slow");
    const runs = async () => (await call(`/api/scheduled-tasks/${task.id}/runs`)).body as Record<string, any>[];
    clock.now = new Date("2030-01-07T08:01:01.000Z");
    await until(async () => (await runs()).some((r) => r.status === "running") && fake.inFlight === 1);
    // The task's model is the one the run calls.
    expect(fake.requests.at(-1)?.body.model).toBe("gpt-test");
    clock.now = new Date("2030-01-07T08:02:01.000Z");
    await until(async () => (await runs()).some((r) => r.status === "skipped"));
    const skipped = (await runs()).find((r) => r.status === "skipped")!;
    expect(skipped).toMatchObject({ error: "skipped: a previous run of this task is still active", run_id: null, scheduled_for: "2030-01-07T08:02:00.000Z" });
    // A manual trigger while the run is active is refused, not recorded.
    expect((await call(`/api/scheduled-tasks/${task.id}/trigger`, { json: {} })).status).toBe(409);
    const live = (await runs()).find((r) => r.status === "running")!;
    expect((await call(`/threads/${live.thread_id}/runs/${live.run_id}/cancel?wait=1`, { json: {} })).status).toBeLessThan(300);
    await until(async () => (await runs()).find((r) => r.id === live.id)?.status === "interrupted");
    expect((await runs()).length).toBe(2);
  });

  it("answers every bad input with a 4xx {detail} and stores nothing", async () => {
    await start(SCRIPTED + schedulerYaml("  min_interval_seconds: 300\n  max_tasks_per_user: 2\n  min_once_delay_seconds: 60\n"));
    const bad = async (json: Record<string, unknown>, status: number, detail: string | RegExp) => {
      const res = await call("/api/scheduled-tasks", { json });
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect(typeof res.body.detail === "string" ? res.body.detail : JSON.stringify(res.body.detail)).toMatch(detail);
    };
    const cron = (c: string) => ({ ...everyMinute, schedule_spec: { cron: c } });
    await bad(cron("0 * * * * *"), 422, "Cron expression must contain exactly 5 fields");
    await bad(cron("0 0 * * * * 2030"), 422, "Cron expression must contain exactly 5 fields");
    await bad(cron("* * * * *"), 422, /minimum interval is 300 seconds/);
    await bad(cron("61 * * * *"), 422, /Invalid cron expression/);
    await bad({ ...cron("0 9 * * *"), timezone: "Mars/Olympus_Mons" }, 422, "Unknown timezone: Mars/Olympus_Mons");
    await bad({ ...everyMinute, schedule_type: "once", schedule_spec: { run_at: "2020-01-01T09:00:00Z" } }, 422, "once schedule must be in the future");
    await bad({ ...everyMinute, schedule_type: "once", schedule_spec: { run_at: "2030-01-07T09:00:50" }, timezone: "Europe/Berlin" }, 422, "at least 60 seconds in the future");
    await bad({ ...everyMinute, schedule_type: "once", schedule_spec: { run_at: "tomorrow" } }, 422, /Invalid isoformat/);
    await bad({ ...everyMinute, schedule_type: "weekly" }, 422, "Unsupported schedule_type");
    await bad({ ...cron("0 9 * * *"), context_mode: "reuse_thread" }, 422, "reuse_thread requires thread_id");
    await bad({ ...cron("0 9 * * *"), context_mode: "reuse_thread", thread_id: "3f1e0f3c-0000-4000-8000-000000000000" }, 404, "Thread not found");
    await bad({ ...cron("0 9 * * *"), model_name: "nope" }, 422, "Unknown model_name 'nope'");
    await bad({ ...cron("0 9 * * *"), title: "" }, 422, /title/);
    expect((await call("/api/scheduled-tasks")).body).toEqual([]);
    // The per-user cap: the third task is refused and not stored.
    for (const title of ["one", "two"]) expect((await call("/api/scheduled-tasks", { json: { ...cron("0 9 * * *"), title } })).status).toBe(200);
    await bad({ ...cron("0 9 * * *"), title: "three" }, 422, "at most 2 tasks per user");
    expect((await call("/api/scheduled-tasks")).body.map((t: { title: string }) => t.title).sort()).toEqual(["one", "two"]);
    // A one-shot in the future, in the user's zone: a wall-clock time without offset is read in that zone.
    const [one] = (await call("/api/scheduled-tasks")).body;
    const patched = await call(`/api/scheduled-tasks/${one.id}`, { method: "PATCH", json: { schedule_spec: { cron: "30 2 * * *" }, timezone: "America/New_York" } });
    expect(patched.body.timezone).toBe("America/New_York");
    expect(new Date(patched.body.next_run_at).toLocaleString("en-US", { timeZone: "America/New_York", hour: "2-digit", minute: "2-digit", hour12: false })).toBe("02:30");
    expect((await call(`/api/scheduled-tasks/${one.id}`, { method: "PATCH", json: { timezone: "Nowhere/City" } })).status).toBe(422);
    expect((await call(`/api/scheduled-tasks/${one.id}`)).body.timezone).toBe("America/New_York");
  });

  it("keeps tasks to their user: another user's task or thread answers 404", async () => {
    await start(SCRIPTED + schedulerYaml(), false);
    const alice = await signUp(h!.url, "alice@example.com", "correct-horse-battery", "initialize");
    const bob = await signUp(h!.url, "bob@example.com", "correct-horse-battery");
    const thread = (await (await alice.fetch("/threads", { json: {} })).json()).thread_id;
    const res = await alice.fetch("/api/scheduled-tasks", { json: { ...everyMinute, context_mode: "reuse_thread", thread_id: thread } });
    expect(res.status).toBe(200);
    const task = await res.json();
    expect(task.thread_id).toBe(thread);
    expect(await (await alice.fetch(`/api/threads/${thread}/scheduled-tasks`)).json()).toMatchObject([{ id: task.id }]);
    for (const [method, path] of [["GET", ""], ["PATCH", ""], ["DELETE", ""], ["POST", "/pause"], ["POST", "/resume"], ["POST", "/trigger"], ["GET", "/runs"]]) {
      const r = await bob.fetch(`/api/scheduled-tasks/${task.id}${path}`, { method, ...(method === "PATCH" ? { json: { title: "mine" } } : method === "POST" ? { json: {} } : {}) });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    expect(await (await bob.fetch("/api/scheduled-tasks")).json()).toEqual([]);
    expect((await bob.fetch(`/api/threads/${thread}/scheduled-tasks`)).status).toBe(404);
    const onHers = await bob.fetch("/api/scheduled-tasks", { json: { ...everyMinute, context_mode: "reuse_thread", thread_id: thread } });
    expect(onHers.status).toBe(404);
    expect(await (await bob.fetch("/api/scheduled-tasks")).json()).toEqual([]);
    expect((await (await alice.fetch(`/api/scheduled-tasks/${task.id}`)).json()).title).toBe("Digest");
  });
});
