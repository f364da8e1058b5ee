import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { captureLogs } from "../support/capture-logs.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { buildTestApp, postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46 item 1: DeerFlow's `guardrails:` section over HTTP. The model (a fake OpenAI server) asks for write_file;
// the guardrail decides before the tool runs, and the model's next request shows what it was told.
const fake = useFakeOpenAI();
const work = mkdtempSync(path.join(tmpdir(), "guardrails-"));
const PROVIDERS = path.join(work, "providers.mjs");
let h: Harness;
let logs: ReturnType<typeof captureLogs>;

const config = (guardrails: string) => `models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: gpt-test
    api_key: sk-test
    base_url: ${fake.url}
tool_groups:
  - name: file:write
tools:
  - name: write_file
    group: file:write
    use: deerflow.sandbox.tools:write_file_tool
${guardrails}`;

const DENY_WRITE = `guardrails:
  enabled: true
  provider:
    use: deerflow.guardrails.builtin:AllowlistProvider
    config:
      denied_tools: ["bash", "write_file"]
`;

beforeAll(async () => {
  writeFileSync(PROVIDERS, [
    "export class Throwing { constructor() { this.name = 'throwing'; } async aevaluate() { throw new Error('policy service unreachable'); } }",
    "export class Hanging { constructor(config) { this.name = 'hanging'; this.config = config; } evaluate() { return new Promise(() => {}); } }",
    "export class AllowAll { evaluate() { return { allow: true, reasons: [{ code: 'ok' }] }; } }",
  ].join("\n"));
  logs = captureLogs();
  h = await startHarness(config(DENY_WRITE));
});
afterAll(async () => {
  await h.close();
  logs.restore();
  rmSync(work, { recursive: true, force: true });
});

/** The fake asks for write_file once, then answers with the text of the tool result it got. */
function scriptWrite(file: string) {
  fake.respond = (body) => {
    const last = body.messages.at(-1);
    if (last.role === "tool") return { content: `tool said: ${last.content}` };
    return { toolCalls: [{ name: "write_file", args: { path: `/mnt/user-data/outputs/${file}`, content: "hello", description: "save" } }] };
  };
}

async function run(): Promise<{ threadId: string; messages: any[]; ms: number }> {
  const thread = await (await postJson(`${h.url}/threads`, {})).json();
  const t0 = performance.now();
  const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: { messages: [{ role: "user", content: "write it" }] }, stream_mode: ["values"] });
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text()).frames;
  expect(frames.some((f) => f.event === "error")).toBe(false);
  return { threadId: thread.thread_id, messages: frames.filter((f) => f.event === "values").at(-1)!.data.messages, ms: performance.now() - t0 };
}

const outputFile = (threadId: string, file: string) => path.join(h.dir, ".deer-flow", "users", "default", "threads", threadId, "user-data", "outputs", file);
const toolMessage = (messages: any[]) => messages.find((m) => m.type === "tool");

describe("guardrails over HTTP", () => {
  it("denies a denied tool: it does not run, and the model sees the reason as the tool result", async () => {
    h.writeConfig(config(DENY_WRITE)); // each test sets its own section: the order is not fixed
    scriptWrite("denied.txt");
    const { threadId, messages } = await run();
    expect(toolMessage(messages)).toMatchObject({ name: "write_file", status: "error" });
    expect(toolMessage(messages).content).toBe("Guardrail denied: tool 'write_file' was blocked (oap.tool_not_allowed). Reason: tool 'write_file' is denied. Choose an alternative approach.");
    expect(existsSync(outputFile(threadId, "denied.txt"))).toBe(false);
    const second = fake.requests.at(-1)!.body.messages.at(-1);
    expect(second).toMatchObject({ role: "tool" });
    expect(second.content).toContain("Reason: tool 'write_file' is denied");
    // Logged with the run id, and counted in /metrics.
    const line = logs.lines().find((l) => l.msg === "guardrails denied tool 'write_file'" && l.thread_id === threadId);
    expect(line?.run_id).toMatch(/.+/);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_guard_decisions_total\{guard="guardrails",decision="deny"\} [1-9]/);
  });

  it("lets an allowed tool run (the allowlist provider and a custom provider by use: path)", async () => {
    h.writeConfig(config(`guardrails:\n  enabled: true\n  provider:\n    use: ${PROVIDERS}:AllowAll\n`));
    scriptWrite("allowed.txt");
    const { threadId, messages } = await run();
    expect(toolMessage(messages).status).not.toBe("error");
    expect(existsSync(outputFile(threadId, "allowed.txt"))).toBe(true);
  });

  it("fails closed: a provider that throws denies the call", async () => {
    h.writeConfig(config(`guardrails:\n  enabled: true\n  provider:\n    use: ${PROVIDERS}:Throwing\n`));
    scriptWrite("thrown.txt");
    const { threadId, messages } = await run();
    expect(toolMessage(messages).content).toBe("Guardrail denied: tool 'write_file' was blocked (oap.evaluator_error). Reason: guardrails provider error (fail-closed). Choose an alternative approach.");
    expect(existsSync(outputFile(threadId, "thrown.txt"))).toBe(false);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_guard_decisions_total\{guard="guardrails",decision="error"\} [1-9]/);
  });

  it("fails closed: a provider that never answers is denied within its timeout", async () => {
    h.writeConfig(config(`guardrails:\n  enabled: true\n  timeout_ms: 300\n  provider:\n    use: ${PROVIDERS}:Hanging\n    config: {x: 1}\n`));
    scriptWrite("hung.txt");
    const { threadId, messages, ms } = await run();
    expect(toolMessage(messages).content).toContain("(oap.evaluator_error)");
    expect(existsSync(outputFile(threadId, "hung.txt"))).toBe(false);
    expect(ms).toBeLessThan(5000);
    expect(logs.lines().some((l) => l.thread_id === threadId && /no decision within 300 ms/.test(l.msg))).toBe(true);
  });
});

describe("guardrails at start", () => {
  it("refuses to start with a provider module that does not exist, naming it", async () => {
    const cfg = parseAppConfigText(config(`guardrails:\n  enabled: true\n  provider:\n    use: ./no-such-guard.mjs:Guard\n`), "config.yaml");
    await expect(buildTestApp({ getAppConfig: () => cfg, home: path.join(work, "home") })).rejects.toThrow(/guardrails\.provider\.use '\.\/no-such-guard\.mjs:Guard' cannot be loaded/);
  });

  it("refuses an enabled section without a provider", () => {
    expect(() => parseAppConfigText(config("guardrails:\n  enabled: true\n"), "config.yaml")).toThrow(/guardrails.enabled is true but no provider is configured/);
  });
});
