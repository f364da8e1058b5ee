import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Fixes for findings of the second new-user review: each case is an attack or a malformed input that once
// answered 500 or did something unsafe.
const CONFIG = "agents_api:\n  enabled: true\nmodels:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeAll(async () => {
  h = await startHarness(CONFIG);
});
afterAll(async () => h.close());

const multipart = (name: string, content: string, boundary = "XyZ") =>
  `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n--${boundary}--\r\n`;

describe("hardening", () => {
  it("answers wrongly typed state values with 422, not 500", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "typed" });
    for (const values of [{ title: 5 }, { todos: "x" }, { goal: 5 }]) {
      const res = await postJson(`${h.url}/threads/typed/state`, { values });
      expect(res.status, JSON.stringify(values)).toBe(422);
      expect((await res.json()).detail).toMatch(/^Invalid state values/);
    }
  });

  it("reads the state at a given checkpoint (SDK time travel), 404 for an unknown one", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "travel" });
    await (await postJson(`${h.url}/threads/travel/runs/wait`, { input: { messages: [{ role: "user", content: "one" }] } })).json();
    const history = await (await postJson(`${h.url}/threads/travel/history`, { limit: 100 })).json();
    const oldest = history.at(-1);
    const at = await (await fetch(`${h.url}/threads/travel/state/${oldest.checkpoint_id}`)).json();
    expect(at.checkpoint_id).toBe(oldest.checkpoint_id);
    const posted = await (await postJson(`${h.url}/threads/travel/state/checkpoint`, { checkpoint: { checkpoint_id: oldest.checkpoint_id } })).json();
    expect(posted.checkpoint_id).toBe(oldest.checkpoint_id);
    expect((await fetch(`${h.url}/threads/travel/state/nope`)).status).toBe(404);
  });

  it("answers an over-long URL with a JSON 414 whose detail does not repeat the whole URL", async () => {
    const res = await fetch(`${h.url}/threads/${"a".repeat(5000)}`);
    expect(res.status).toBe(414);
    const { detail } = await res.json();
    expect(typeof detail).toBe("string");
    expect(detail.length).toBeLessThanOrEqual(301);
  });

  it("reserves the agent name 'default'", async () => {
    const res = await postJson(`${h.url}/api/agents`, { name: "Default", soul: "x" });
    expect(res.status).toBe(422);
    expect((await res.json()).detail).toContain("reserved");
  });

  it("answers malformed multipart with 400 and refuses invisible or bidi characters in upload names", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "up" });
    const noBoundary = await fetch(`${h.url}/api/threads/up/uploads`, { method: "POST", headers: { "content-type": "multipart/form-data" }, body: "garbage" });
    expect(noBoundary.status).toBe(400);
    const truncated = await fetch(`${h.url}/api/threads/up/uploads`, {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=XyZ" },
      body: multipart("a.txt", "hello").slice(0, 60),
    });
    expect(truncated.status).toBe(400);
    for (const name of ["a\u202Egpj.exe", "zero\u200Bwidth.txt", ". ."]) {
      const res = await fetch(`${h.url}/api/threads/up/uploads`, { method: "POST", headers: { "content-type": "multipart/form-data; boundary=XyZ" }, body: multipart(name, "x") });
      expect(res.status, JSON.stringify(name)).toBe(422);
    }
    expect((await (await fetch(`${h.url}/api/threads/up/uploads`)).json()).count).toBe(0);
  });

  it("serves XML artifacts as attachments (no script runs in the gateway's origin)", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "xss" });
    const body = '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>';
    const up = await fetch(`${h.url}/api/threads/xss/uploads`, { method: "POST", headers: { "content-type": "multipart/form-data; boundary=XyZ" }, body: multipart("report.xml", body) });
    expect(up.status).toBe(200);
    const res = await fetch(`${h.url}/api/threads/xss/artifacts/uploads/report.xml`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toMatch(/^attachment/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("keeps the last good config when an edit leaves no models, and reports degraded health", async () => {
    h.writeConfig("");
    const health = await (await fetch(`${h.url}/health`)).json();
    expect(health.status).toBe("degraded");
    expect(health.config_error).toContain("no models configured");
    expect((await (await fetch(`${h.url}/api/models`)).json()).models).toHaveLength(1);
    h.writeConfig(CONFIG);
    expect((await (await fetch(`${h.url}/health`)).json()).status).toBe("healthy");
  });
});
