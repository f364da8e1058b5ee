// A goal set from the DeerFlow web app's composer advances (issue 47): the app PUTs the goal, then streams a run
// exactly as its `useStream` submit does (core/threads/hooks.ts: `context` with the mode's flags, `stream_resumable`,
// `recursion_limit: 1000`, the SDK's stream modes), and the run must continue like a plain `runs/wait` does.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";

const CONFIG = `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: scripted
    token_delay_ms: 40
    supports_thinking: true
sandbox:
  use: deerflow-gateway/sandbox:AutoSandboxProvider
scheduler:
  enabled: true
  poll_interval_seconds: 1
tools:
  - { name: bash, group: bash, use: "deerflow.sandbox.tools:bash_tool" }
  - { name: read_file, group: "file:read", use: "deerflow.sandbox.tools:read_file_tool" }
  - { name: write_file, group: "file:write", use: "deerflow.sandbox.tools:write_file_tool" }
tool_groups:
  - name: bash
  - name: "file:read"
  - name: "file:write"
agents_api:
  enabled: true
checkpointer:
  type: sqlite
`;
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
let h: Harness;
let user: Session;
beforeEach(async () => {
  // Signed in, as the app runs against the shipped gateway.
  h = await startHarness(CONFIG, { authDisabled: false });
  user = await signUp(h.url, "admin@example.com", "correct horse battery staple 42", "initialize");
});
afterEach(async () => h.close());

const getJson = async (p: string) => (await user.fetch(p)).json() as Promise<any>;

/** The body the app's SDK client posts for a message sent in `mode` (hooks.ts sendMessage + useStream.submit). */
const appRun = (threadId: string, text: string, mode: "flash" | "pro" | "ultra", checkpoint?: Record<string, unknown>) => ({
  input: { messages: [{ type: "human", content: [{ type: "text", text }], additional_kwargs: {} }] },
  config: { recursion_limit: 1000 },
  context: {
    model_name: "scripted", mode, reasoning_effort: mode === "ultra" ? "high" : mode === "pro" ? "medium" : undefined,
    thinking_enabled: mode !== "flash", is_plan_mode: mode === "pro" || mode === "ultra", subagent_enabled: mode === "ultra", thread_id: threadId,
  },
  stream_mode: ["values", "messages-tuple", "custom", "updates"],
  stream_subgraphs: false,
  stream_resumable: true,
  on_disconnect: "continue",
  assistant_id: "lead_agent",
  // useStream's implicit branch: the head it last fetched (`fetchStateHistory: {limit: 1}`), sent with every submit.
  ...(checkpoint ? { checkpoint } : {}),
});

describe("a goal set from the web app", () => {
  for (const mode of ["flash", "pro", "ultra"] as const) {
    it(`continues the app's streamed run in ${mode} mode until no progress`, async () => {
      const thread = `app-goal-${mode}`;
      expect((await user.fetch("/api/threads", { json: { thread_id: thread } })).status).toBe(200);
      const first = await user.fetch(`/api/threads/${thread}/runs/stream`, { json: appRun(thread, "Start of the goal thread", mode) });
      expect(first.status).toBe(200);
      await first.text();
      // The app refetches its one-entry history when a run finishes: that head is what its next submit names.
      const [head] = (await (await user.fetch(`/api/threads/${thread}/history`, { json: { limit: 1 } })).json()) as any[];
      const { thread_id: _omit, ...checkpoint } = head.checkpoint;
      const set = await user.fetch(`/api/threads/${thread}/goal`, { method: "PUT", json: { objective: "Write the final summary" } });
      expect(set.status).toBe(200);
      const res = await user.fetch(`/api/threads/${thread}/runs/stream`, { json: appRun(thread, "Write the final summary", mode, checkpoint) });
      expect(res.status).toBe(200);
      await res.text();
      const { goal } = await getJson(`/api/threads/${thread}/goal`);
      expect(goal).toMatchObject({ continuation_count: 3, no_progress_count: 2 });
      expect(goal.last_evaluation.stand_down_reason).toBe("no_progress_detected");
    });
  }
});
