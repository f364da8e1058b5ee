// Run events across processes (issue 47): two gateway processes on one PostgreSQL database and one Redis, each with
// its own DEER_FLOW_HOME (nothing shared on disk). A run executes on one process; the other returns its stored
// catalog events (`run.end`, a subtask's `subagent.step`s), read from the database's `run_events` table.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { postJson } from "../support/harness.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
const started: GatewayProcess[] = [];
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-events-"));
  const config = path.join(dir, "config.yaml");
  writeFileSync(
    config,
    `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: s
tool_groups:
  - name: file:read
tools:
  - name: read_file
    group: file:read
    use: deerflow-gateway/sandbox:readFileTool
memory:
  enabled: false
${sharedSections(db.url, testPrefix())}`,
  );
  const env = (name: string) => ({ DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, `home-${name}`), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents") });
  [a, b] = await Promise.all([startGateway(await freePort(), env("a")), startGateway(await freePort(), env("b"))]);
  started.push(a, b);
}, PROCESS_HOOK_MS);

afterAll(async () => {
  await Promise.all(started.map((g) => g.stop("SIGKILL")));
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const get = async (on: GatewayProcess, p: string) => {
  const res = await fetch(`${on.url}${p}`);
  return { status: res.status, body: (await res.json()) as any };
};

describe("run events across processes", () => {
  it("a run on one process: the other returns its run.end and its subtask's steps", async () => {
    const { thread_id: threadId } = await (await postJson(`${a.url}/api/threads`, {})).json();
    const childPrompt = `!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/missing.txt", description: "peek" })}`;
    const res = await postJson(`${a.url}/api/threads/${threadId}/runs/stream`, {
      assistant_id: "lead_agent",
      input: { messages: [{ type: "human", content: `!call task ${JSON.stringify({ description: "look", prompt: childPrompt, subagent_type: "general-purpose" })}` }] },
      context: { subagent_enabled: true },
      // The web app's modes: the subtask's `task_*` chunks travel on `custom`.
      stream_mode: ["values", "messages-tuple", "custom"],
    });
    expect(res.status).toBe(200);
    await res.text();
    const [run] = (await get(a, `/api/threads/${threadId}/runs`)).body;
    expect(run.status).toBe("success");
    const base = `/api/threads/${threadId}/runs/${run.run_id}/events`;

    // The run's events reach the database when it ends; the other process reads them there.
    await until(async () => (await get(b, `${base}?event_types=run.end`)).body.length === 1, 30_000, 100);
    const [end] = (await get(b, `${base}?event_types=run.end`)).body;
    expect(end).toMatchObject({ event_type: "run.end", category: "outputs", metadata: { status: "success" }, content: { status: "success" } });
    const [start] = (await get(b, `${base}?event_types=subagent.start`)).body;
    const taskId = start.content.task_id;
    const steps = (await get(b, `${base}?event_types=subagent.step&task_id=${taskId}`)).body;
    expect(steps.map((e: any) => [e.content.kind, e.content.message_index])).toEqual([["ai", 0], ["tool", 1], ["ai", 2]]);
    expect(steps[1].content).toMatchObject({ task_id: taskId, tool_name: "read_file" });
    // Both processes return the same rows, seq for seq.
    expect((await get(a, `${base}?event_types=subagent.step&task_id=${taskId}`)).body).toEqual(steps);
    // Paging forward from the other process with the web app's cursor.
    expect((await get(b, `${base}?event_types=subagent.step&task_id=${taskId}&after_seq=${steps[0].seq}&limit=1`)).body).toEqual([steps[1]]);
  }, 120_000);
});
