import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PgMcpTaskStore } from "../../src/runtime/mcp-tasks/pg-task-store.js";
import { McpTasksConfigSchema } from "../../src/runtime/mcp-tasks/task-config.js";
import type { NotificationLauncher } from "../../src/runtime/mcp-tasks/task-notifier.js";
import { McpTaskService, type RawToolResult } from "../../src/runtime/mcp-tasks/task-service.js";
import { postJson, startHarness } from "../support/harness.js";
import { createTestDatabase } from "../support/services.js";

// Issue 49 item 2: MCP background tasks on PostgreSQL. Four services, each on its own pool (as four processes),
// share one task table: every due task gets exactly one status call and one delivery run however they race; a
// gateway with `database.backend: postgres` and `mcp_tasks.enabled` starts, and its tasks live in PostgreSQL.
let db: Awaited<ReturnType<typeof createTestDatabase>>;
const stores: PgMcpTaskStore[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  for (let i = 0; i < 4; i++) stores.push(new PgMcpTaskStore(new pg.Pool({ connectionString: db.url, max: 2 })));
  await Promise.all(stores.map((s) => s.migrate()));
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await db?.drop();
});

const TOOLSET = { name: "render", submit_tool: "submit", status_tool: "status", cancel_tool: "cancel" };
const structured = (v: unknown): RawToolResult => ({ content: [], structuredContent: v });

it("gives each due task one status call and one delivery run across racing processes", async () => {
  const clock = { now: 1_000_000 };
  const config = McpTasksConfigSchema.parse({ enabled: true, poll_interval_seconds: 5, max_concurrent_polls: 50 });
  const statusCalls = new Map<string, number>();
  let n = 0;
  const caller = async (_server: string, tool: string, args: Record<string, unknown>): Promise<RawToolResult> => {
    if (tool === "submit") return structured({ task_id: `r${++n}`, status: "running" });
    const id = String(args.task_id);
    statusCalls.set(id, (statusCalls.get(id) ?? 0) + 1);
    // A slow status call, so the other processes scan while the first still holds its claim.
    await new Promise((r) => setTimeout(r, 20));
    return structured({ task_id: id, status: "completed", result: { id } });
  };
  const launches: string[] = [];
  const launcher: NotificationLauncher = {
    launch: async (o) => (launches.push(o.taskId), { runId: `run-${o.taskId}` }),
    runStatus: async () => ({ status: "success", error: null }),
  };
  const services = stores.map((s) => new McpTaskService(s, () => config, caller, () => clock.now));
  services.forEach((s) => s.setLauncher(launcher));
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push((await services[i % 4].submit({ userId: "u", threadId: `t${i}`, server: "srv", toolset: TOOLSET, args: {} })).id);
  clock.now += 5000;
  await Promise.all(services.map((s) => s.pollOnce()));
  await Promise.all(services.map((s) => s.pollOnce()));
  expect(statusCalls.size).toBe(20);
  expect([...statusCalls.values()].every((c) => c === 1)).toBe(true);
  expect(launches.sort()).toEqual([...ids].sort());
  // Dispatched; the next delivery step (looking at the run) is due a poll interval later.
  clock.now += 5000;
  await Promise.all(services.map((s) => s.pollOnce()));
  for (const id of ids) expect(await stores[0].get(id, "u")).toMatchObject({ status: "completed", notification_status: "delivered", notification_run_id: `run-${id}` });
  expect(launches).toHaveLength(20);
});

it("takes over a task whose claimer died once its lease expires", async () => {
  const clock = { now: 5_000_000 };
  const config = McpTasksConfigSchema.parse({ enabled: true, poll_interval_seconds: 5, lease_seconds: 60 });
  const calls: string[] = [];
  const caller = async (_s: string, tool: string): Promise<RawToolResult> => (calls.push(tool), tool === "submit" ? structured({ task_id: "lease-1", status: "running" }) : structured({ task_id: "lease-1", status: "running" }));
  const [a, b] = [new McpTaskService(stores[0], () => config, caller, () => clock.now), new McpTaskService(stores[1], () => config, caller, () => clock.now)];
  const task = await a.submit({ userId: "lease-user", threadId: "t", server: "srv", toolset: TOOLSET, args: {} });
  clock.now += 5000;
  // A process claims it and dies before answering (the claim is all that happened).
  expect((await stores[2].claimDue(clock.now, 10, "dead-process", 60_000)).map((t) => t.id)).toContain(task.id);
  await b.pollOnce();
  expect(calls.filter((c) => c === "status")).toHaveLength(0);
  clock.now += 60_000;
  await b.pollOnce();
  expect(calls.filter((c) => c === "status")).toHaveLength(1);
  expect(await stores[0].get(task.id, "lease-user")).toMatchObject({ status: "working", last_poll_error: null });
});

it("starts a gateway on PostgreSQL with mcp_tasks on, its task table in the database", async () => {
  const h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\ndatabase:\n  backend: postgres\n  url: ${db.url}\nmcp_tasks:\n  enabled: true\n`);
  try {
    expect((await (await fetch(`${h.url}/api/features`)).json()).mcp_tasks).toEqual({ enabled: true });
    const tid = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id as string;
    await stores[0].insert({
      id: "pg-visible", user_id: "default", thread_id: tid, server_name: "srv", task_name: "render", remote_task_id: "pg-r1", driver_data: {}, status: "working", result: null, result_preview: null,
      result_truncated: false, result_artifact: null, input_required: null, error: null, last_poll_error: null, last_cancel_error: null,
      consecutive_poll_error_count: 0, cancel_attempt_count: 0, cancel_requested_at: null, last_polled_at: null, next_poll_at: null,
      notification_status: null, notification_run_id: null, notification_attempt_count: 0, notification_error: null, next_notification_at: null,
      assistant_id: null, created_at: new Date().toISOString(), updated_at: new Date().toISOString(),
    });
    // What one process wrote, the gateway's panel shows.
    const list = await (await fetch(`${h.url}/api/threads/${tid}/mcp-tasks`)).json();
    expect(list).toEqual([expect.objectContaining({ task_id: "pg-visible", task_name: "render", status: "working" })]);
  } finally {
    await h.close();
  }
});
