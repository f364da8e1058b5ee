import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

// Two real gateway processes on one PostgreSQL database and one Redis, both polling for due scheduled tasks every
// second: every due task is claimed by one of them (FOR UPDATE SKIP LOCKED) and fires exactly once.
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
const started: GatewayProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-sched-"));
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: s
scheduler:
  enabled: true
  multi_instance: true
  poll_interval_seconds: 1
  min_once_delay_seconds: 1
  max_concurrent_runs: 32
${sharedSections(db.url, testPrefix(), 3_000)}`,
  );
  const env = { DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") };
  // One after the other: two processes compiling the sources at once on a loaded machine can miss the start timeout.
  for (let i = 0; i < 2; i++) started.push(await startGateway(await freePort(), env));
}, 90_000);

afterAll(async () => {
  await Promise.all(started.map((g) => g.stop("SIGKILL")));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const json = async (url: string, init: RequestInit = {}) => (await fetch(url, { ...init, headers: { "content-type": "application/json" } })).json();

it("fires each due task exactly once with two processes polling the same PostgreSQL", async () => {
  const [a, b] = started;
  const dueAt = new Date(Date.now() + 4_000).toISOString();
  const tasks = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      json(`${(i % 2 ? a : b).url}/api/scheduled-tasks`, { method: "POST", body: JSON.stringify({ title: `t${i}`, prompt: `task ${i}`, schedule_type: "once", schedule_spec: { run_at: dueAt }, timezone: "UTC" }) }),
    ),
  );
  expect(tasks.every((t) => t.status === "enabled" && t.next_run_at === dueAt)).toBe(true);
  // Both processes list the same tasks (one database).
  expect((await json(`${b.url}/api/scheduled-tasks`)).length).toBe(12);
  await until(async () => (await json(`${a.url}/api/scheduled-tasks`)).every((t: { status: string }) => t.status === "completed"), 40_000, 200);
  for (const task of tasks) {
    const runs = await json(`${a.url}/api/scheduled-tasks/${task.id}/runs`);
    expect(runs, task.title).toMatchObject([{ status: "success", trigger: "scheduled", scheduled_for: dueAt }]);
    // Exactly one agent run on the task's thread, and it carries the task's prompt.
    const threadRuns = await json(`${b.url}/threads/${runs[0].thread_id}/runs`);
    expect(threadRuns.map((r: { run_id: string }) => r.run_id)).toEqual([runs[0].run_id]);
    expect(threadRuns[0].metadata.scheduled_task_id).toBe(task.id);
  }
  const stored = await json(`${b.url}/api/scheduled-tasks`);
  expect(stored.every((t: { run_count: number }) => t.run_count === 1)).toBe(true);
}, 90_000);
