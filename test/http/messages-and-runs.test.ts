import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSse } from "../support/sse.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// Issue 13 items 13-16: titles from what the user typed, `!call` with an upload, only wire-format messages out,
// 422 for a run with nothing to do, and a recorded model substitution.
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeAll(async () => {
  h = await startHarness(CONFIG);
});
afterAll(async () => h.close());

async function upload(threadId: string, name: string, content: string) {
  expect((await uploadFiles(h.url, threadId, [[name, content]])).status).toBe(200);
}
const withFile = (content: string, filename: string) => ({ role: "user", content, additional_kwargs: { files: [{ filename, size: 5, path: `/mnt/user-data/uploads/${filename}`, status: "uploaded" }] } });

describe("titles and the scripted model with an upload announced", () => {
  it("titles the thread from the typed text, not the injected uploads block", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "typed" });
    await upload("typed", "report.txt", "hello");
    const values = await (await postJson(`${h.url}/threads/typed/runs/wait`, { input: { messages: [withFile("Summarize my report", "report.txt")] } })).json();
    expect(values.title).toBe("Summarize my report");
    // The model did see the uploads block; the stored message keeps the original text for the UI.
    expect(values.messages[0].content).toContain("<current_uploads>");
    expect(values.messages[0].additional_kwargs.original_user_content).toBe("Summarize my report");
    expect(values.messages.at(-1).content).toBe("You said: Summarize my report");
  });

  it("gives an attachment-only first message the default title", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "attach-only" });
    await upload("attach-only", "data.csv", "a,b");
    const values = await (await postJson(`${h.url}/threads/attach-only/runs/wait`, { input: { messages: [withFile("", "data.csv")] } })).json();
    expect(values.title).toBe("New Conversation");
  });

  it("keeps the scripted model's !call working when an upload is announced", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "call" });
    await upload("call", "notes.txt", "notes");
    const values = await (await postJson(`${h.url}/threads/call/runs/wait`, { input: { messages: [withFile('!call ask_clarification {"question": "Which section?"}', "notes.txt")] } })).json();
    const ai = values.messages.find((m: { type: string }) => m.type === "ai");
    expect(ai.tool_calls[0]).toMatchObject({ name: "ask_clarification", args: { question: "Which section?" } });
  });
});

describe("wire-format messages only", () => {
  it("after a task call, state and values/updates frames carry no lc_* keys and no message twice in updates", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "task" });
    const text = `!call task ${JSON.stringify({ description: "look it up", prompt: "research cats", subagent_type: "general-purpose" })}`;
    const res = await postJson(`${h.url}/threads/task/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, context: { subagent_enabled: true }, stream_mode: ["values", "updates"] });
    const body = await res.text();
    expect(body).toContain("Task Succeeded");
    expect(body).not.toMatch(/"lc_[a-z_]+"/);
    const { frames } = parseSse(body);
    const seen = new Set<string>();
    for (const frame of frames.filter((f) => f.event === "updates")) {
      for (const [node, update] of Object.entries(frame.data as Record<string, unknown>)) {
        expect(Array.isArray(update), node).toBe(false);
        for (const m of ((update as { messages?: { id: string }[] } | null)?.messages ?? [])) {
          expect(seen.has(m.id), `${node} re-sent ${m.id}`).toBe(false);
          seen.add(m.id);
        }
      }
    }
    const state = await (await fetch(`${h.url}/threads/task/state`)).text();
    expect(state).not.toMatch(/"lc_[a-z_]+"/);
    const history = await (await postJson(`${h.url}/threads/task/history`, { limit: 100 })).text();
    expect(history).not.toMatch(/"lc_[a-z_]+"/);
  });
});

describe("runs with nothing to do, and model substitution", () => {
  it("answers an empty body on /runs/wait (and a thread without an interrupt) with 422", async () => {
    for (const body of [undefined, "", "{}"]) {
      const res = await fetch(`${h.url}/runs/wait`, { method: "POST", headers: { "content-type": "application/json" }, ...(body !== undefined ? { body } : {}) });
      expect(res.status, String(body)).toBe(422);
      expect((await res.json()).detail[0]).toMatchObject({ type: "missing", loc: ["body", "input"] });
    }
    await postJson(`${h.url}/threads`, { thread_id: "idle" });
    expect((await postJson(`${h.url}/threads/idle/runs/wait`, {})).status).toBe(422);
    expect((await postJson(`${h.url}/threads/idle/runs/wait`, { input: null })).status).toBe(422);
    expect(await (await fetch(`${h.url}/threads/idle/runs`)).json()).toEqual([]);
  });

  it("still resumes a thread stopped at interrupt_before without input", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "paused" });
    await (await postJson(`${h.url}/threads/paused/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }] }, interrupt_before: ["model_request"] })).json();
    expect((await (await fetch(`${h.url}/threads/paused/state`)).json()).next).toEqual(["model_request"]);
    const resumed = await postJson(`${h.url}/threads/paused/runs/wait`, {});
    expect(resumed.status).toBe(200);
    expect((await resumed.json()).messages.at(-1).content).toBe("You said: hi");
  });

  it("runs the default model for an unknown model_name and records the substitution in the run", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "subst" });
    const run = await (await postJson(`${h.url}/threads/subst/runs`, { input: { messages: [{ role: "user", content: "hi" }] }, context: { model_name: "gpt-nope" } })).json();
    await fetch(`${h.url}/threads/subst/runs/${run.run_id}/join`);
    const record = await (await fetch(`${h.url}/threads/subst/runs/${run.run_id}`)).json();
    expect(record.status).toBe("success");
    expect(record.metadata.model_name).toBe("s");
    expect(record.metadata.model_substitution).toEqual({ requested: "gpt-nope", used: "s", reason: "not_configured" });
  });
});
