import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROCESS_START_MS } from "../support/gateway-process.js";
import { until } from "../support/wait.js";

// Drives `src/server.ts` as a real process: the entry point `npm start` runs.
const root = path.resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(path.join(tmpdir(), "dfgw-proc-"));
// Retries: a killed child may still be flushing into its home when the directory goes.
afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));

function startServer(env: Record<string, string>, nodeArgs: string[] = []) {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "src/server.ts"], {
    cwd: root,
    env: { ...process.env, HOST: "127.0.0.1", DEER_FLOW_HOME: path.join(dir, "home"), LOG_LEVEL: "info", DEER_FLOW_AUTH_DISABLED: "", DEER_FLOW_ENV: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => out };
}

// A cold start under load takes tens of seconds (PROCESS_START_MS); the describe allows it.
const waitFor = (check: () => Promise<boolean>) => until(check, PROCESS_START_MS, 100);

/** Streams a stateless run of "ping" from the server on `port` (auth off) and returns the SSE body. */
async function streamPing(port: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/runs/stream`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: { messages: [{ role: "user", content: "ping" }] } }),
  });
  return res.text();
}

describe("the server process", { timeout: PROCESS_START_MS + 30_000 }, () => {
  it("loads the OpenTelemetry SDK, the MCP adapters and the OpenAI client only when the config uses them", async () => {
    const config = path.join(dir, "lean.yaml");
    // An OpenAI model is configured but not used by the run; no OTLP endpoint; no MCP server.
    writeFileSync(config, "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n  - name: gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-4o-mini\n    api_key: sk-test\n");
    const modules = path.join(dir, "modules.log");
    const port = String(18000 + Math.floor(Math.random() * 2000));
    const { child, exited } = startServer({ DEER_FLOW_CONFIG_PATH: config, PORT: port, DEER_FLOW_AUTH_DISABLED: "1", DFGW_MODULE_LOG: modules }, ["--import", "./test/support/module-recorder.mjs"]);
    // Not /health: it imports every configured model class to check its `use:` (src/runtime/model-health.ts).
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/api/models`).catch(() => null))?.ok ?? false);
    expect(await streamPing(port)).toContain("You said: ping");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const loaded = readFileSync(modules, "utf8");
    // The recorder works: the packages every run needs are listed.
    expect(loaded).toContain("/node_modules/@langchain/langgraph/");
    expect(loaded).toContain("/node_modules/@opentelemetry/api/");
    for (const unused of ["@opentelemetry/sdk-trace-base", "@opentelemetry/exporter-trace-otlp-http", "@langchain/mcp-adapters", "@modelcontextprotocol/sdk", "@langchain/openai", "openai"]) {
      expect(loaded, unused).not.toContain(`/node_modules/${unused}/`);
    }
  });

  it("exits non-zero at start-up on an invalid config, naming the file and the bad key", async () => {
    const bad = path.join(dir, "bad.yaml");
    writeFileSync(bad, "models:\n  - name: broken\n    use: langchain_openai:ChatOpenAI\n");
    const { exited, output } = startServer({ DEER_FLOW_CONFIG_PATH: bad, PORT: "0" });
    expect(await exited).toBe(1);
    expect(output()).toContain(bad);
    expect(output()).toContain("models[0].model");
  });

  it("exits non-zero when a referenced environment variable is unset, naming it and its key", async () => {
    const file = path.join(dir, "env.yaml");
    writeFileSync(file, "models:\n  - name: m\n    use: langchain_openai:ChatOpenAI\n    model: x\n    api_key: $DFGW_TEST_UNSET_KEY\n");
    const { exited, output } = startServer({ DEER_FLOW_CONFIG_PATH: file, PORT: "0" });
    expect(await exited).toBe(1);
    expect(output()).toContain("DFGW_TEST_UNSET_KEY");
    expect(output()).toContain("models[0].api_key");
  });

  it("serves on PORT with JSON request logs, and stops cleanly on SIGTERM", async () => {
    const config = path.join(dir, "ok.yaml");
    writeFileSync(config, "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    const port = String(18000 + Math.floor(Math.random() * 2000));
    const { child, exited, output } = startServer({ DEER_FLOW_CONFIG_PATH: config, PORT: port, DEER_FLOW_AUTH_DISABLED: "1" });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok);
    expect(await streamPing(port)).toContain("You said: ping");
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const lines = output().trim().split("\n").filter((l) => l.startsWith("{"));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.some((l) => JSON.parse(l).msg === "deerflow-gateway ready")).toBe(true);
    expect(lines.filter((l) => JSON.parse(l).req?.url === "/runs/stream")).toHaveLength(1);
    expect(lines.some((l) => JSON.parse(l).level === 40 && /AUTHENTICATION IS OFF/.test(JSON.parse(l).msg))).toBe(true);
  });

  it("requires sign-in by default: protected routes are 401, /health and the login routes answer", async () => {
    const config = path.join(dir, "auth.yaml");
    writeFileSync(config, "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    const port = String(18000 + Math.floor(Math.random() * 2000));
    const { child, exited, output } = startServer({ DEER_FLOW_CONFIG_PATH: config, PORT: port });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok);
    const res = await fetch(`http://127.0.0.1:${port}/runs/wait`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: { messages: [{ role: "user", content: "ping" }] } }) });
    expect(res.status).toBe(401);
    expect(await (await fetch(`http://127.0.0.1:${port}/api/v1/auth/setup-status`)).json()).toEqual({ needs_setup: true, registration_enabled: true });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(output()).not.toContain("AUTHENTICATION IS OFF");
  });

  it("refuses to start with DEER_FLOW_AUTH_DISABLED=1 when DEER_FLOW_ENV=production", async () => {
    const config = path.join(dir, "prod.yaml");
    writeFileSync(config, "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    const { exited, output } = startServer({ DEER_FLOW_CONFIG_PATH: config, PORT: "0", DEER_FLOW_AUTH_DISABLED: "1", DEER_FLOW_ENV: "production" });
    expect(await exited).toBe(1);
    expect(output()).toContain("DEER_FLOW_AUTH_DISABLED=1 is refused when DEER_FLOW_ENV=production");
  });

  it("interrupts a streaming run on SIGTERM: the client gets `end` and the process exits 0", async () => {
    const config = path.join(dir, "slow.yaml");
    writeFileSync(config, "models:\n  - name: slow\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 50\n");
    const port = String(18000 + Math.floor(Math.random() * 2000));
    const { child, exited } = startServer({ DEER_FLOW_CONFIG_PATH: config, PORT: port, DEER_FLOW_AUTH_DISABLED: "1" });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).ok);
    const res = await fetch(`http://127.0.0.1:${port}/runs/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { messages: [{ role: "user", content: Array(400).fill("w").join(" ") }] }, stream_mode: "messages-tuple" }),
    });
    const reader = res.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    child.kill("SIGTERM");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain("event: end");
    expect(await exited).toBe(0);
  });
});
