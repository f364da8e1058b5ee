import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpTasksConfigSchema } from "../../src/runtime/mcp-tasks/task-config.js";
import { McpTaskService, type RawToolResult } from "../../src/runtime/mcp-tasks/task-service.js";
import { ConflictError } from "../../src/errors.js";
import { MAX_NOTIFICATION_ATTEMPTS } from "../../src/runtime/mcp-tasks/task-notifier.js";
import { SqliteMcpTaskStore } from "../../src/runtime/mcp-tasks/sqlite-task-store.js";
import { detail } from "../../routes/mcp-tasks.js";
import { parseAppConfig } from "../../src/config/schema.js";
import { ExtensionsConfigSchema } from "../../src/config/extensions-config.js";
import { buildTestApp } from "../support/harness.js";

// The poller's rules (upstream app/mcp_tasks/service.py, mcp/tasks/ordinary.py) with a scripted remote server:
// backoff and tracking_degraded after failed status calls, a contract violation failing the task for good, an
// oversized result kept as a preview, input_required polled slowly.
const dirs: string[] = [];
afterEach(() => void dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const TOOLSET = { name: "render", submit_tool: "submit", status_tool: "status", cancel_tool: "cancel" };
const structured = (v: unknown): RawToolResult => ({ content: [], structuredContent: v });

function setup(answers: Record<string, (args: Record<string, unknown>) => RawToolResult>, cfg: Record<string, unknown> = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), "mcp-task-svc-"));
  dirs.push(dir);
  const clock = { now: 1_000_000 };
  const store = new SqliteMcpTaskStore(path.join(dir, "t.sqlite"));
  const config = McpTasksConfigSchema.parse({ enabled: true, poll_interval_seconds: 5, max_poll_backoff_seconds: 30, tracking_degraded_after_errors: 2, ...cfg });
  const service = new McpTaskService(store, () => config, async (_server, tool, args) => answers[tool](args), () => clock.now);
  const submit = () => service.submit({ userId: "u", threadId: "t", server: "srv", toolset: TOOLSET, args: {} });
  return { clock, store, service, submit, get: async (id: string) => (await store.get(id, "u"))! };
}

describe("MCP task poller", () => {
  it("backs off exponentially after failed status calls, reports tracking_degraded, and recovers", async () => {
    let fail = true;
    const s = setup({
      submit: () => structured({ task_id: "r1", status: "running" }),
      status: () => (fail ? { isError: true, content: [{ type: "text", text: "upstream busy" }] } : structured({ task_id: "r1", status: "running" })),
    });
    const task = await s.submit();
    expect(task.next_poll_at).toBe(s.clock.now + 5000);
    s.clock.now += 5000;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ consecutive_poll_error_count: 1, last_poll_error: "MCP task tool 'status' returned an error: upstream busy", next_poll_at: s.clock.now + 10_000 });
    s.clock.now += 10_000;
    await s.service.pollOnce();
    expect((await s.get(task.id)).next_poll_at).toBe(s.clock.now + 20_000);
    expect(detail(await s.get(task.id), 2).tracking_degraded).toBe(true);
    s.clock.now += 20_000;
    await s.service.pollOnce();
    expect((await s.get(task.id)).next_poll_at).toBe(s.clock.now + 30_000); // capped at max_poll_backoff_seconds
    fail = false;
    s.clock.now += 30_000;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ status: "working", consecutive_poll_error_count: 0, last_poll_error: null });
    expect(detail(await s.get(task.id), 2).tracking_degraded).toBe(false);
  });

  it("fails a task for good on a malformed status answer or a task_id that does not match", async () => {
    const s = setup({ submit: () => structured({ task_id: "r1", status: "running" }), status: () => structured({ task_id: "other", status: "running" }) });
    const task = await s.submit();
    s.clock.now += 5000;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ status: "failed", next_poll_at: null, notification_status: "pending" });
    expect((await s.get(task.id)).error).toContain("does not match");
  });

  it("refuses a submit answer without structuredContent (nothing stored)", async () => {
    const s = setup({ submit: () => ({ content: [{ type: "text", text: "started r1" }] }) });
    await expect(s.submit()).rejects.toThrow("must return structuredContent");
    expect(await s.store.listByThread("t", "u", 10)).toEqual([]);
  });

  it("keeps an oversized result as a preview, and polls input_required no faster than its interval", async () => {
    let answer: unknown = { task_id: "r1", status: "input_required", input_required: { question: "Which size?" } };
    const s = setup({ submit: () => structured({ task_id: "r1", status: "running" }), status: () => structured(answer) }, { max_result_bytes: 100, result_preview_max_chars: 20 });
    const task = await s.submit();
    s.clock.now += 5000;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ status: "input_required", input_required: { question: "Which size?" }, next_poll_at: s.clock.now + 60_000 });
    answer = { task_id: "r1", status: "completed", result: { text: "x".repeat(500) } };
    s.clock.now += 60_000;
    await s.service.pollOnce();
    const done = await s.get(task.id);
    expect(done).toMatchObject({ status: "completed", result: null, result_truncated: true, next_poll_at: null });
    expect(done.result_preview).toHaveLength(20);
  });
});

describe("delivery into the thread", () => {
  it("waits for a busy thread at no attempt's cost, retries a failed run with backoff, and dead-letters after the last attempt", async () => {
    const s = setup({ submit: () => structured({ task_id: "r1", status: "running" }), status: () => structured({ task_id: "r1", status: "failed", error: "render crashed" }) });
    let busy = true;
    const prompts: string[] = [];
    s.service.setLauncher({
      launch: async (o) => {
        if (busy) throw new ConflictError("Thread is busy");
        prompts.push(o.prompt);
        return { runId: `run-${prompts.length}` };
      },
      runStatus: async () => ({ status: "error", error: "model down" }),
    });
    const task = await s.submit();
    s.clock.now += 5000;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ status: "failed", notification_status: "pending", notification_attempt_count: 0, next_notification_at: s.clock.now + 5000 });
    busy = false;
    for (let attempt = 1; attempt <= MAX_NOTIFICATION_ATTEMPTS; attempt++) {
      s.clock.now = (await s.get(task.id)).next_notification_at!;
      await s.service.pollOnce(); // starts the run
      expect(await s.get(task.id)).toMatchObject({ notification_status: "dispatched", notification_run_id: `run-${attempt}` });
      s.clock.now = (await s.get(task.id)).next_notification_at!;
      await s.service.pollOnce(); // finds it failed
      const after = await s.get(task.id);
      expect(after).toMatchObject({ notification_status: "retry", notification_attempt_count: attempt, notification_error: "model down" });
      expect(after.next_notification_at).toBe(s.clock.now + Math.min(5 * 2 ** attempt, 30) * 1000);
    }
    s.clock.now = (await s.get(task.id)).next_notification_at!;
    await s.service.pollOnce();
    expect(await s.get(task.id)).toMatchObject({ notification_status: "dead_letter", next_notification_at: null });
    expect((await s.get(task.id)).notification_error).toContain("stopped after 5 failed attempts: model down");
    expect(prompts).toHaveLength(MAX_NOTIFICATION_ATTEMPTS);
    expect(prompts[0]).toContain('"error":"render crashed"');
    expect(prompts[0]).not.toContain('"r1"');
  });
});

describe("task_toolsets", () => {
  it("refuses a raw tool bound to two roles, naming both", () => {
    const parsed = ExtensionsConfigSchema.safeParse({ mcpServers: { s: { type: "http", url: "http://x/mcp", task_toolsets: [{ name: "a", submit_tool: "go", status_tool: "go", cancel_tool: "stop" }] } } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0].message).toContain("MCP task tool 'go' must be unique across task_toolsets and roles; it is configured as both a.submit_tool and a.status_tool");
  });
});

describe("mcp_tasks at start", () => {
  const saved = process.env.DEER_FLOW_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.DEER_FLOW_HOME;
    else process.env.DEER_FLOW_HOME = saved;
  });
  const start = (mcpTasks: Record<string, unknown>, database: Record<string, unknown> = {}) => {
    const home = mkdtempSync(path.join(tmpdir(), "mcp-task-start-"));
    dirs.push(home);
    process.env.DEER_FLOW_HOME = home;
    const config = parseAppConfig({ models: [{ name: "s", use: "deerflow-gateway:ScriptedChatModel", model: "s" }], mcp_tasks: mcpTasks, ...database });
    return buildTestApp({ getAppConfig: () => config });
  };

  it("refuses a misspelt key of the section, naming it", async () => {
    await expect(start({ enabled: true, poll_interval_secs: 1 })).rejects.toThrow(/mcp_tasks: .*poll_interval_secs/);
  });

  it("starts with the section off and reports the feature off", async () => {
    const app = await start({ enabled: false });
    try {
      expect((await app.inject({ url: "/api/features" })).json().mcp_tasks).toEqual({ enabled: false });
    } finally {
      await app.close();
    }
  });
});
