import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeMcpClients } from "../../src/tools/mcp-tools.js";
import { startMcpOAuthFake, type McpOAuthFake } from "../support/fakes/mcp-oauth.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

// Issue 49 item 2: MCP background tasks (`mcp_tasks:` and the web app's background-tasks panel). The model calls
// the submit tool of a task toolset over HTTP; the gateway stores the remote job, polls its status tool, and the
// panel's routes list, show and cancel it. The MCP server is the OAuth-protected fake (a real MCP SDK server).
const ENV = "DEER_FLOW_EXTENSIONS_CONFIG_PATH";
const saved = process.env[ENV];
const MODEL = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let fake: McpOAuthFake;
let work: string;
let h: Harness;

beforeAll(async () => {
  fake = await startMcpOAuthFake();
  work = mkdtempSync(path.join(tmpdir(), "mcp-tasks-"));
  writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({
    mcpServers: {
      jobs: {
        type: "http", url: `${fake.url}/mcp`,
        oauth: { token_url: `${fake.url}/oauth/token`, client_id: fake.clientId, client_secret: fake.clientSecret },
        task_toolsets: [{ name: "research", submit_tool: "submit_job", status_tool: "job_status", cancel_tool: "cancel_job" }],
      },
    },
  }));
  process.env[ENV] = path.join(work, "extensions_config.json");
  h = await startHarness(`${MODEL}mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 0.05\n`);
});
afterAll(async () => {
  await h.close();
  await closeMcpClients();
  await fake.close();
  if (saved === undefined) delete process.env[ENV];
  else process.env[ENV] = saved;
  rmSync(work, { recursive: true, force: true });
});

type Msg = { type: string; content: unknown; name?: string };
async function run(threadId: string, text: string): Promise<Msg[]> {
  const res = await postJson(`${h.url}/threads/${threadId}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"] });
  expect(res.status).toBe(200);
  return (parseSse(await res.text()).frames.filter((f) => f.event === "values").at(-1)!.data as { messages: Msg[] }).messages;
}
const newThread = async () => (await (await postJson(`${h.url}/threads`, {})).json()).thread_id as string;
const tasksUrl = (tid: string, rest = "") => `${h.url}/api/threads/${tid}/mcp-tasks${rest}`;
const getJson = async (url: string) => (await fetch(url)).json();
async function submit(tid: string, topic: string): Promise<string> {
  const messages = await run(tid, `!call jobs_submit_job {"topic": "${topic}"}`);
  const tool = messages.find((m) => m.type === "tool");
  const id = /task_id: ([0-9a-f-]{36})/.exec(String(tool?.content))?.[1];
  expect(id, String(tool?.content)).toBeDefined();
  return id!;
}

describe("MCP background tasks", () => {
  it("turns mcp_tasks on in /api/features", async () => {
    expect((await getJson(`${h.url}/api/features`)).mcp_tasks).toEqual({ enabled: true });
  });

  it("submits through the model's tool call, tracks the remote job, and shows it finished with its result", async () => {
    const tid = await newThread();
    const taskId = await submit(tid, "alpha");
    const list = await getJson(tasksUrl(tid));
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ task_id: taskId, task_name: "research", tracking_degraded: false, cancel_requested: false });
    await until(async () => (await getJson(tasksUrl(tid, `/${taskId}`))).status === "working");
    const job = [...fake.jobs.values()].find((j) => j.id.endsWith("-alpha"))!;
    job.status = "completed";
    job.result = { summary: "alpha done" };
    await until(async () => (await getJson(tasksUrl(tid, `/${taskId}`))).status === "completed");
    const done = await getJson(tasksUrl(tid, `/${taskId}`));
    expect(done).toMatchObject({ result: { summary: "alpha done" }, result_truncated: false, error: null });
    expect(done.last_polled_at).toEqual(expect.any(String));
  });

  it("delivers a finished task into its thread as a new run the model answers, with the event hidden from the app", async () => {
    const tid = await newThread();
    const taskId = await submit(tid, "delta");
    const job = [...fake.jobs.values()].find((j) => j.id.endsWith("-delta"))!;
    job.status = "completed";
    job.result = { summary: "delta report ready" };
    await until(async () => (await getJson(tasksUrl(tid, `/${taskId}`))).notification_status === "delivered");
    const detailAfter = await getJson(tasksUrl(tid, `/${taskId}`));
    expect(detailAfter).toMatchObject({ notification_error: null, notification_attempt_count: 0 });
    const runs = (await getJson(`${h.url}/threads/${tid}/runs`)) as { run_id: string; status: string; metadata: Record<string, unknown> }[];
    const delivery = runs.filter((r) => r.metadata?.mcp_task_notification);
    expect(delivery).toHaveLength(1);
    expect(delivery[0]).toMatchObject({ status: "success", metadata: { mcp_task_notification: { task_id: taskId } } });
    const messages = (await getJson(`${h.url}/threads/${tid}/state`)).values.messages as { type: string; content: string; additional_kwargs?: Record<string, unknown> }[];
    const event = messages.at(-2)!;
    expect(event).toMatchObject({ type: "human", additional_kwargs: { hide_from_ui: true } });
    expect(event.content).toContain("A durable background MCP task has an update");
    expect(event.content).toContain('"status":"completed"');
    expect(event.content).not.toContain(job.id); // the remote handle stays out of the thread
    expect(messages.at(-1)).toMatchObject({ type: "ai" });
    expect(String(messages.at(-1)!.content)).toContain("delta report ready");
  });

  it("hides the status and cancel tools from the model", async () => {
    const messages = await run(await newThread(), '!call jobs_cancel_job {"task_id": "x"}');
    expect(messages.some((m) => m.type === "tool")).toBe(false);
  });

  it("cancels a running task through the server's cancel tool", async () => {
    const tid = await newThread();
    const taskId = await submit(tid, "beta");
    const res = await fetch(tasksUrl(tid, `/${taskId}/cancel`), { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ task_id: taskId, status: "cancelled", cancel_requested: true, cancel_attempt_count: 1, last_cancel_error: null });
    expect([...fake.jobs.values()].find((j) => j.id.endsWith("-beta"))!.status).toBe("cancelled");
    expect((await getJson(tasksUrl(tid)))[0]).toMatchObject({ status: "cancelled", cancel_requested: true });
  });

  it("answers 404 for a task of another thread and for an unknown task", async () => {
    const tid = await newThread();
    const taskId = await submit(tid, "gamma");
    const other = await newThread();
    expect((await fetch(tasksUrl(other, `/${taskId}`))).status).toBe(404);
    expect((await fetch(tasksUrl(other, `/${taskId}/cancel`), { method: "POST" })).status).toBe(404);
    expect((await fetch(tasksUrl(tid, "/no-such-task"))).status).toBe(404);
    expect(await getJson(tasksUrl(other))).toEqual([]);
  });
});
