// Subtask steps after a reload, as the DeerFlow web app loads them (issue 47, frontend core/tasks/api.ts and
// message-list.tsx): the app streams an Ultra-mode run, then on reload rebuilds the conversation from
// `GET /api/threads/{id}/messages/page` (each row's `run_id` is carried onto its message), renders one subtask card per
// `task` tool call keyed by the call's id, and on expand pages `GET .../runs/{run_id}/events?event_types=subagent.step
// &task_id={call id}&limit=500[&after_seq=]` and keeps the events whose `content.task_id` (or `metadata.task_id`) is
// that id, ordered by `content.message_index`.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: scripted
    supports_thinking: true
tools:
  - { name: read_file, group: "file:read", use: "deerflow.sandbox.tools:read_file_tool" }
tool_groups:
  - name: "file:read"
checkpointer:
  type: sqlite
`;
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
let user: Session;
beforeEach(async () => {
  h = await startHarness(CONFIG, { authDisabled: false });
  user = await signUp(h.url, "admin@example.com", "correct horse battery staple 42", "initialize");
});
afterEach(async () => h.close());

/** The body the app's SDK client posts for a message sent in Ultra mode (hooks.ts sendMessage + useStream.submit). */
const ultraRun = (threadId: string, text: string) => ({
  input: { messages: [{ type: "human", content: [{ type: "text", text }], additional_kwargs: {} }] },
  config: { recursion_limit: 1000 },
  context: { model_name: "scripted", mode: "ultra", reasoning_effort: "high", thinking_enabled: true, is_plan_mode: true, subagent_enabled: true, thread_id: threadId },
  stream_mode: ["values", "messages-tuple", "custom", "updates"],
  stream_subgraphs: false,
  stream_resumable: true,
  on_disconnect: "continue",
  assistant_id: "lead_agent",
});

type Step = { message_index: number; kind: string; text: string; tool_name?: string; tool_calls?: { name?: string }[] };

/** The app's fetchSubtaskSteps + eventsToSteps: pages forward by `after_seq` until a short page, filters, sorts. */
async function appSubtaskSteps(threadId: string, runId: string, taskId: string, pageSize: number): Promise<Step[]> {
  const events: any[] = [];
  let afterSeq: number | undefined;
  for (let page = 0; page < 100; page++) {
    const params = new URLSearchParams({ event_types: "subagent.step", task_id: taskId, limit: String(pageSize) });
    if (afterSeq !== undefined) params.set("after_seq", String(afterSeq));
    const res = await user.fetch(`/api/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/events?${params}`);
    expect(res.status).toBe(200);
    const batch = (await res.json()) as any[];
    events.push(...batch);
    if (batch.length < pageSize) break;
    afterSeq = batch[batch.length - 1]?.seq;
    if (afterSeq === undefined) break;
  }
  return events
    .filter((e) => e.event_type === "subagent.step" && e.content && (e.content.task_id ?? e.metadata?.task_id) === taskId)
    .map((e) => ({ message_index: e.content.message_index, kind: e.content.kind, text: e.content.text ?? "", tool_name: e.content.tool_name, tool_calls: e.content.tool_calls }))
    .sort((a, b) => a.message_index - b.message_index);
}

describe("subtask steps after a reload (Ultra mode, as the web app loads them)", () => {
  it("the task call's card finds the child's steps through the run id of its history row", async () => {
    const thread = "ultra-subtask";
    expect((await user.fetch("/api/threads", { json: { thread_id: thread } })).status).toBe(200);
    const child = `!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/missing.txt", description: "peek" })}`;
    const text = `!call task ${JSON.stringify({ description: "Look for the missing file", prompt: child, subagent_type: "general-purpose" })}`;
    const res = await user.fetch(`/api/threads/${thread}/runs/stream`, { json: ultraRun(thread, text) });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("task_running");

    // Reload: the conversation comes from the message feed; the card is keyed by the task call's id and gets the
    // run id of the AI message's row.
    const page = (await (await user.fetch(`/api/threads/${thread}/messages/page`)).json()) as { data: any[] };
    const ai = page.data.find((r) => r.content.type === "ai" && r.content.tool_calls?.some((c: any) => c.name === "task"));
    expect(ai).toBeDefined();
    const call = ai.content.tool_calls.find((c: any) => c.name === "task");
    const [run] = (await (await user.fetch(`/api/threads/${thread}/runs`)).json()) as any[];
    expect(ai.run_id).toBe(run.run_id);

    for (const pageSize of [500, 1]) {
      const steps = await appSubtaskSteps(thread, ai.run_id, call.id, pageSize);
      // What the card renders (stepsForDisplay, completed): the tool row by name; the final answer is dropped.
      expect(steps.map((s) => [s.message_index, s.kind, s.tool_name ?? null])).toEqual([[0, "ai", null], [1, "tool", "read_file"], [2, "ai", null]]);
      expect(steps[0].tool_calls?.map((c) => c.name)).toEqual(["read_file"]);
    }
  });
});
