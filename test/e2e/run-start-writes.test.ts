import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// ThreadData and Uploads make their writes on the run's first model call
// (src/agents/middlewares/run-start.ts). A run whose model call fails must still leave them in the thread, as
// DeerFlow's before_agent hooks did: the stamped message with its <current_uploads> block, thread_data, uploaded_files.
let h: Harness;

beforeAll(async () => {
  h = await startHarness(`models:
  - {name: scripted, use: "deerflow-gateway:ScriptedChatModel", model: scripted-echo, token_delay_ms: 0}
`);
});
afterAll(async () => {
  await h.close();
});

async function uploadNotes(threadId: string): Promise<void> {
  expect((await uploadFiles(h.url, threadId, [["notes.txt", "remember the milk"]])).status).toBe(200);
}

const attached = { filename: "notes.txt", size: 17, path: "/mnt/user-data/uploads/notes.txt", status: "uploaded" };

async function stateOf(threadId: string): Promise<any> {
  const res = await fetch(`${h.url}/threads/${threadId}/state`);
  expect(res.status).toBe(200);
  return res.json();
}

describe("run-start writes (ThreadData, Uploads)", () => {
  it("are in the thread after a run whose model call failed", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    await uploadNotes(thread);
    const res = await postJson(`${h.url}/threads/${thread}/runs`, { input: { messages: [{ role: "user", content: "!fail provider down", additional_kwargs: { files: [attached] } }] } });
    expect(res.status).toBe(200);
    const run = await res.json();
    const joined = await fetch(`${h.url}/threads/${thread}/runs/${run.run_id}/join`);
    expect(joined.status).toBe(200);
    expect((await (await fetch(`${h.url}/threads/${thread}/runs/${run.run_id}`)).json()).status).toBe("error");

    const state = await stateOf(thread);
    // Saved as if the input had carried them: the failed model step is still what comes next.
    expect(state.next).toEqual(["model_request"]);
    const [human] = state.values.messages;
    expect(state.values.messages).toHaveLength(1);
    expect(human.name).toBe("user-input");
    expect(human.additional_kwargs).toMatchObject({ run_id: run.run_id, uploads_injected: true, original_user_content: "!fail provider down" });
    expect(typeof human.additional_kwargs.timestamp).toBe("string");
    expect(human.content).toContain("<current_uploads>");
    expect(human.content).toContain("notes.txt");
    expect(state.values.thread_data).toEqual({ workspace_path: "/mnt/user-data/workspace", uploads_path: "/mnt/user-data/uploads", outputs_path: "/mnt/user-data/outputs" });
    expect(state.values.uploaded_files.map((f: { filename: string }) => f.filename)).toEqual(["notes.txt"]);
  });

  it("are made once, with the answer, on a run that succeeds", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    await uploadNotes(thread);
    const res = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "read it", additional_kwargs: { files: [attached] } }] } });
    expect(res.status).toBe(200);
    const state = await stateOf(thread);
    expect(state.values.messages.map((m: { type: string }) => m.type)).toEqual(["human", "ai"]);
    expect(state.values.messages[0].name).toBe("user-input");
    expect(state.values.messages[0].content).toContain("<current_uploads>");
    expect(state.values.uploaded_files).toHaveLength(1);
  });
});
