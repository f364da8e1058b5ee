import { createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { startFakeAioSandbox, type FakeAioSandbox } from "../support/fakes/aio-sandbox.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// Issue 45 item 2: the sandbox service failing (HTTP 500, too slow, down) and a command past its limit are tool
// results naming the service, never failed runs, and neither the service's address nor its token appears in a
// result, an HTTP answer or a log line. Mode: `base_url` (one running sandbox for the deployment), with a token.
const TOKEN = "sandbox-token-8c2d";
const config = (baseUrl: string) =>
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n" +
  `sandbox:\n  use: deerflow.community.aio_sandbox:AioSandboxProvider\n  base_url: ${baseUrl}\n  api_key: $FAKE_SANDBOX_TOKEN\n  request_timeout: 1\n  bash_command_timeout: 1\n` +
  "tool_groups:\n  - name: sandbox\n" +
  `tools:\n${["bash", "read_file", "write_file"].map((t) => `  - name: ${t}\n    group: sandbox\n    use: deerflow.sandbox.tools:${t}_tool\n`).join("")}`;

let fake: FakeAioSandbox;
let h: Harness;
let logs: ReturnType<typeof captureLogs>;
beforeAll(async () => {
  fake = await startFakeAioSandbox();
  fake.keys.sandbox = TOKEN;
  process.env.FAKE_SANDBOX_TOKEN = TOKEN;
  logs = captureLogs();
  h = await startHarness(config(fake.sandboxUrl("shared")));
});
afterAll(async () => {
  await h?.close();
  logs?.restore();
  await fake?.close();
  delete process.env.FAKE_SANDBOX_TOKEN;
});
afterEach(() => {
  fake.faults.length = 0;
});

/** Runs one scripted tool call; returns the run's final status and the tool's result text. */
async function call(harness: Harness, thread: string, tool: string, args: Record<string, unknown>): Promise<{ status: string; text: string }> {
  await postJson(`${harness.url}/threads`, { thread_id: thread, if_exists: "do_nothing" });
  const res = await postJson(`${harness.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: `!call ${tool} ${JSON.stringify(args)}` }] } });
  const values = await res.json();
  const text = String((values.messages ?? []).filter((m: { type: string }) => m.type === "tool").at(-1)?.content ?? JSON.stringify(values));
  const runs = await (await fetch(`${harness.url}/threads/${thread}/runs`)).json();
  return { status: runs[0]?.status, text };
}
const expectNoSecrets = (text: string) => {
  const { host } = new URL(fake.url);
  expect(text).not.toContain(host);
  expect(text).not.toContain(TOKEN);
};

describe("AioSandboxProvider with base_url: the service failing", () => {
  it("works against the running sandbox, sending its token", async () => {
    const { status, text } = await call(h, "f-ok", "bash", { command: "echo up" });
    expect([status, text]).toEqual(["success", "up"]);
    expect(fake.requests.filter((r) => r.sandbox === "shared").every((r) => r.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("turns an HTTP 500 into a tool result naming the service", async () => {
    await call(h, "f-500", "bash", { command: "true" });
    fake.faults.push({ route: "/v1/file/read", status: 500 });
    const { status, text } = await call(h, "f-500", "read_file", { path: "/mnt/user-data/workspace/a.txt" });
    expect(status).toBe("success");
    expect(text).toBe("Error: the sandbox service (aio_sandbox) answered HTTP 500: Internal sandbox failure (injected)");
    expectNoSecrets(text);
  });

  it("gives up on a service slower than request_timeout, as a tool result", async () => {
    await call(h, "f-slow", "bash", { command: "true" });
    fake.faults.push({ route: "/v1/file/write", delayMs: 3000 });
    const started = Date.now();
    const { status, text } = await call(h, "f-slow", "write_file", { path: "/mnt/user-data/workspace/a.txt", content: "x" });
    expect(status).toBe("success");
    expect(text).toBe("Error: the sandbox service (aio_sandbox) did not answer within 1 s");
    expect(Date.now() - started).toBeLessThan(2900);
  });

  it("reports a command past bash_command_timeout as timed out", async () => {
    const { status, text } = await call(h, "f-sleep", "bash", { command: "echo before; sleep 30" });
    expect(status).toBe("success");
    expect(text).toMatch(/^Error: Command timed out after 1 seconds/);
    expect(text).toContain("before");
  });

  it("answers an upload the sandbox cannot take with 502 naming the service, keeping the host copy", async () => {
    await call(h, "f-up", "bash", { command: "true" });
    fake.faults.push({ route: "/v1/file/write", status: 500 });
    const res = await uploadFiles(h.url, "f-up", [["a.txt", "x"]]);
    expect(res.status).toBe(502);
    const body = await res.text();
    expect(body).toContain("the sandbox service (aio_sandbox) answered HTTP 500");
    expectNoSecrets(body);
    const listed = await (await fetch(`${h.url}/api/threads/f-up/uploads/list`)).json();
    expect(listed.files.map((f: { filename: string }) => f.filename)).toEqual(["a.txt"]);
  });

  it("names a service that is down, and leaves the gateway serving", async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const port = (dead.address() as { port: number }).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const down = await startHarness(config(`http://127.0.0.1:${port}`));
    try {
      const { status, text } = await call(down, "f-down", "bash", { command: "echo x" });
      expect(status).toBe("success");
      expect(text).toBe("Error: the sandbox service (aio_sandbox) is unreachable (connection failed); the sandbox may be down");
      expect(text).not.toContain(String(port));
      expect((await fetch(`${down.url}/health`)).status).toBe(200);
      const artifact = await fetch(`${down.url}/api/threads/f-down/artifacts/outputs/x.md`);
      expect(artifact.status).toBe(502);
      expect(await artifact.text()).not.toContain(String(port));
    } finally {
      await down.close();
    }
  });

  it("never writes the service's address or token to the log", async () => {
    // A failing call and a working one of its own, so the log holds both paths whatever ran before.
    fake.faults.push({ route: "/v1/shell/exec", status: 500 });
    await call(h, "f-log-fail", "bash", { command: "true" });
    fake.faults.length = 0;
    expect((await call(h, "f-log", "bash", { command: "echo logged" })).text).toBe("logged");
    const all = JSON.stringify(logs.lines());
    expect(all).toContain("aio sandbox acquired");
    expectNoSecrets(all);
  });
});
