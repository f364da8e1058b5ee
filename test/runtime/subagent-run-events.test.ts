// DeerFlow's subagent run events over HTTP (deerflow/subagents/step_events.py): a lead agent delegates with the
// `task` tool; the child's AI turns and tool results are stored as `subagent.step` events that
// `GET .../runs/{id}/events?event_types=subagent.step&task_id=...` returns after the run (a reload), the live
// `task_running` events carry the tool results too, and the task's ToolMessage carries `subagent_result_brief`.
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { parseSse } from "../support/sse.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const CONFIG = [
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s",
  "tool_groups:\n  - name: file:read",
  "tools:\n  - name: read_file\n    group: file:read\n    use: deerflow-gateway/sandbox:readFileTool",
  "",
].join("\n");
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
beforeEach(async () => {
  h = await startHarness(CONFIG);
});
afterEach(async () => h.close());
const get = async (p: string) => (await (await fetch(`${h.url}${p}`)).json()) as any;

describe("subagent run events", () => {
  it("stores the subtask's steps (AI turns and tool results) and the task result's brief", async () => {
    await postJson(`${h.url}/api/threads`, { thread_id: "s1" });
    const childPrompt = `!call read_file ${JSON.stringify({ path: "/mnt/user-data/workspace/missing.txt", description: "peek" })}`;
    const res = await postJson(`${h.url}/api/threads/s1/runs/stream`, {
      assistant_id: "lead_agent",
      input: { messages: [{ type: "human", content: `!call task ${JSON.stringify({ description: "look", prompt: childPrompt, subagent_type: "general-purpose" })}` }] },
      context: { subagent_enabled: true },
      stream_mode: ["values", "custom"],
    });
    const { frames } = parseSse(await res.text());
    const running = frames.filter((f) => f.event === "custom" && (f.data as any)?.type === "task_running").map((f) => f.data as any);
    // Live: the child's tool call turn, its tool result, and its final answer.
    expect(running.map((e) => e.message.type)).toEqual(["ai", "tool", "ai"]);
    expect(running[1].message).toMatchObject({ type: "tool", name: "read_file" });
    const taskId = running[0].task_id;

    const [run] = await get("/api/threads/s1/runs");
    const steps = await get(`/api/threads/s1/runs/${run.run_id}/events?event_types=subagent.step&task_id=${taskId}`);
    expect(steps.map((e: any) => [e.event_type, e.category, e.content.kind, e.content.message_index])).toEqual([
      ["subagent.step", "subagent", "ai", 0], ["subagent.step", "subagent", "tool", 1], ["subagent.step", "subagent", "ai", 2],
    ]);
    expect(steps[0].content).toMatchObject({ task_id: taskId, text: "", truncated: false, tool_calls: [{ name: "read_file", args: { path: "/mnt/user-data/workspace/missing.txt", description: "peek" } }] });
    expect(steps[1].content).toMatchObject({ task_id: taskId, kind: "tool", tool_name: "read_file" });
    expect(steps[2].content.text).toMatch(/^Tool read_file returned: /);
    expect(steps[0].metadata).toEqual({ task_id: taskId, message_index: 0 });
    expect(await get(`/api/threads/s1/runs/${run.run_id}/events?event_types=subagent.step&task_id=other`)).toEqual([]);
    const ends = await get(`/api/threads/s1/runs/${run.run_id}/events?event_types=subagent.start,subagent.end`);
    expect(ends.map((e: any) => e.event_type)).toEqual(["subagent.start", "subagent.end"]);
    expect(ends[1].content).toMatchObject({ task_id: taskId, status: "completed", result: steps[2].content.text });

    const state = await get("/api/threads/s1/state");
    const toolMessage = state.values.messages.find((m: any) => m.type === "tool" && m.name === "task");
    const result = steps[2].content.text;
    expect(toolMessage.additional_kwargs).toMatchObject({ subagent_status: "completed", subagent_result_brief: result, subagent_result_sha256: createHash("sha256").update(result).digest("hex") });
  });
});
