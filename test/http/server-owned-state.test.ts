import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_OWNED_STATE_KEYS } from "../../src/agents/server-owned-state.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 13 items 3-4: state keys the server owns cannot be written by a client, and no response carries a host
// path or a value taken from the environment.
const CONFIG = [
  "models:",
  "  - name: s",
  "    use: deerflow-gateway:ScriptedChatModel",
  "    model: $DFGW_TEST_MODEL_ID",
  "    display_name: $HOME",
  "    description: Runs on $HOME with $DFGW_TEST_MODEL_ID",
  "",
].join("\n");
let h: Harness;
beforeAll(async () => {
  process.env.DFGW_TEST_MODEL_ID = "secret-model-id";
  h = await startHarness(CONFIG);
});
afterAll(async () => {
  await h.close();
  delete process.env.DFGW_TEST_MODEL_ID;
});

describe("server-owned state", () => {
  it("refuses every server-owned key in run input and in state updates with 422 naming it", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "owned" });
    const values: Record<string, unknown> = {
      viewed_images: { "/etc/passwd": { mime_type: "image/png", size: 1, actual_path: "/etc/passwd" } },
      thread_data: { workspace_path: "/", uploads_path: "/etc", outputs_path: "/tmp" },
      sandbox: { sandbox_id: "local:other:thread" },
      artifacts: ["/etc/passwd"],
      uploaded_files: [{ filename: "passwd", path: "/etc/passwd" }],
    };
    for (const key of SERVER_OWNED_STATE_KEYS) {
      const value = values[key] ?? null;
      for (const prefix of ["", "/api"]) {
        const run = await postJson(`${h.url}${prefix}/threads/owned/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }], [key]: value } });
        expect(run.status, `run ${key}`).toBe(422);
        expect((await run.json()).detail[0]).toMatchObject({ type: "server_owned_field", loc: ["body", "input", key] });
        const state = await postJson(`${h.url}${prefix}/threads/owned/state`, { values: { [key]: value } });
        expect(state.status, `state ${key}`).toBe(422);
        expect((await state.json()).detail[0]).toMatchObject({ type: "server_owned_field", loc: ["body", "values", key] });
      }
    }
    const stateless = await postJson(`${h.url}/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }], viewed_images: values.viewed_images } });
    expect(stateless.status).toBe(422);
    // What a client may write still works (the web app renames threads through `title`).
    expect((await postJson(`${h.url}/threads/owned/state`, { values: { title: "Renamed" } })).status).toBe(200);
    expect((await postJson(`${h.url}/threads/owned/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }] } })).status).toBe(200);
  });
});

describe("no host paths or environment values in responses", () => {
  it("state, thread, history and every stream frame show virtual thread directories only", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "paths" });
    const stream = await postJson(`${h.url}/threads/paths/runs/stream`, {
      input: { messages: [{ role: "user", content: "hello" }] },
      stream_mode: ["values", "updates", "messages-tuple", "debug", "tasks", "checkpoints"],
    });
    const text = await stream.text();
    expect(text).toContain("/mnt/user-data/workspace");
    expect(text).not.toContain(h.dir);
    const state = await (await fetch(`${h.url}/threads/paths/state`)).json();
    expect(state.values.thread_data).toEqual({ workspace_path: "/mnt/user-data/workspace", uploads_path: "/mnt/user-data/uploads", outputs_path: "/mnt/user-data/outputs" });
    for (const res of [await fetch(`${h.url}/threads/paths`), await postJson(`${h.url}/threads/paths/history`, { limit: 100 }), await postJson(`${h.url}/threads/paths/runs/wait`, { input: { messages: [{ role: "user", content: "again" }] } })]) {
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain(h.dir);
    }
  });

  it("/api/models keeps descriptive text literal and leaves out a model id taken from the environment", async () => {
    for (const body of [(await (await fetch(`${h.url}/api/models`)).json()).models[0], await (await fetch(`${h.url}/api/models/s`)).json()]) {
      expect(body).toMatchObject({ name: "s", model: null, display_name: "$HOME", description: "Runs on $HOME with $DFGW_TEST_MODEL_ID" });
      expect(JSON.stringify(body)).not.toContain("secret-model-id");
      expect(JSON.stringify(body)).not.toContain(process.env.HOME!);
    }
  });

  it("/health names a broken config file without its absolute path, with the whole message", async () => {
    h.writeConfig(CONFIG + "models: [\n");
    const body = await (await fetch(`${h.url}/health`)).json();
    h.writeConfig(CONFIG);
    expect(body.status).toBe("degraded");
    expect(body.config_error).toContain("config.yaml");
    expect(body.config_error).not.toContain(h.dir);
    // A whole sentence, not one cut before its end (the yaml library ends its first line with ":").
    expect(body.config_error).toMatch(/^Invalid YAML in config\.yaml \(line \d+\): .*column \d+$/);
    expect((await (await fetch(`${h.url}/health`)).json()).status).toBe("healthy");
  });
});
