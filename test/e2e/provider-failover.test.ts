import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { echoReply, useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const fake = useFakeOpenAI();
let h: Harness;
let logs: ReturnType<typeof captureLogs>;
let deadUrl: string;

/** A base URL nothing listens on (connection refused). */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

const entry = (name: string, model: string, url: string, extra = "") =>
  `  - name: ${name}\n    use: langchain_openai:ChatOpenAI\n    model: ${model}\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\n    timeout: 0.5\n${extra}`;

const config = (url: string) =>
  "title:\n  enabled: false\nmodels:\n" +
  entry("flaky", "flaky-id", url, "    fallbacks: [backup]\n") +
  entry("backup", "backup-id", url) +
  entry("unreachable", "flaky-id", deadUrl, "    fallbacks: [ghost, backup]\n") +
  entry("alone", "flaky-id", url) +
  entry("retrying", "flaky-id", url, "    fallbacks: [backup]\n").replace("max_retries: 0", "max_retries: 1");

beforeAll(async () => {
  deadUrl = await closedPortUrl();
  logs = captureLogs();
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
  logs.restore();
});

/** The primary (`flaky-id`) answers `fail`; the backup echoes. */
const primaryFails = (fail: FakeReply) => (body: Record<string, any>) => (body.model === "flaky-id" ? { content: "partial answer from primary", ...fail } : echoReply(body));

async function streamRun(model: string, text = "hello") {
  const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, context: { model_name: model }, stream_mode: ["values", "messages-tuple", "custom"] });
  expect(res.status).toBe(200);
  const { frames } = parseSse(await res.text());
  const { run_id: runId, thread_id: threadId } = frames[0].data;
  const run = await (await fetch(`${h.url}/threads/${threadId}/runs/${runId}`)).json();
  const values = frames.filter((f) => f.event === "values").at(-1)?.data;
  const lastAi = values?.messages?.filter((m: any) => m.type === "ai").at(-1);
  return { frames, run, runId, answer: lastAi?.content as string | undefined, error: frames.find((f) => f.event === "error")?.data };
}

describe("provider failures and model fallback chains", () => {
  it.each([
    ["a 500", { status: 500 }, "server_error", 500],
    ["a 503", { status: 503 }, "server_error", 503],
    ["a 429", { status: 429 }, "rate_limited", 429],
    ["a timeout", { delayMs: 1500 }, "timeout", undefined],
  ] as const)("continues on the next model after %s before the first token, visible in metadata and stream", async (_label, fail, reason, status) => {
    fake.respond = primaryFails(fail);
    const { frames, run, answer, error } = await streamRun("flaky", "fallback please");
    expect(error).toBeUndefined();
    expect(answer).toBe("Echo: fallback please");
    expect(run.status).toBe("success");
    expect(run.metadata.model_name).toBe("flaky");
    expect(run.metadata.model_fallbacks).toEqual([{ from: "flaky", to: "backup", reason, ...(status ? { status } : {}) }]);
    const custom = frames.filter((f) => f.event === "custom").map((f) => f.data);
    expect(custom).toContainEqual({ type: "model_fallback", from: "flaky", to: "backup", reason, ...(status ? { status } : {}) });
    expect(fake.requests.map((r) => r.body.model)).toEqual(["flaky-id", "backup-id"]);
  });

  it("continues after a connection error and skips a fallback that is not configured", async () => {
    const { run, answer, error, runId } = await streamRun("unreachable", "are you there");
    expect(error).toBeUndefined();
    expect(answer).toBe("Echo: are you there");
    expect(run.metadata.model_fallbacks).toEqual([{ from: "unreachable", to: "backup", reason: "connection" }]);
    expect(logs.lines().some((l) => l.run_id === runId && /fallback model 'ghost' cannot be built/.test(l.msg))).toBe(true);
  });

  // LLMErrorHandlingMiddleware (docs/middlewares.md) owns retries and ends a failed turn with user-facing text.
  it("does not fall back or retry after the first token was streamed; the turn ends with user-facing text", async () => {
    fake.respond = primaryFails({ breakAfterTokens: 2 });
    const { run, error, answer } = await streamRun("flaky");
    expect(error).toBeUndefined();
    expect(run.status).toBe("success");
    expect(answer).toMatch(/^The configured LLM provider is temporarily unavailable/);
    expect(run.metadata.model_fallbacks).toBeUndefined();
    expect(fake.requests.map((r) => r.body.model)).toEqual(["flaky-id"]);
  });

  it("does not fall back on a client error (400): the user reads the provider's message, no stack trace", async () => {
    fake.respond = primaryFails({ status: 400 });
    const { run, answer } = await streamRun("flaky");
    expect(run.status).toBe("success");
    expect(answer).toBe("LLM request failed: 400 fake error 400");
    expect(fake.requests.map((r) => r.body.model)).toEqual(["flaky-id"]);
  });

  it("without a fallback chain, max_retries: 0 makes one attempt and ends the turn promptly with user-facing text", async () => {
    fake.respond = primaryFails({ status: 500 });
    const { frames, run, answer } = await streamRun("alone");
    expect(answer).toMatch(/^The configured LLM provider is temporarily unavailable after multiple retries/);
    expect(frames.at(-1)?.event).toBe("end");
    expect(run.status).toBe("success");
    expect(fake.requests).toHaveLength(1);
  });

  it("falls back at once, and retries the whole chain (max_retries + 1 attempts) only when every model failed, logging each retry", async () => {
    fake.respond = () => ({ status: 500 });
    const { run, runId, answer } = await streamRun("retrying", "retry me");
    expect(answer).toMatch(/^The configured LLM provider is temporarily unavailable/);
    expect(fake.requests.map((r) => r.body.model)).toEqual(["flaky-id", "backup-id", "flaky-id", "backup-id"]);
    const retries = logs.lines().filter((l) => l.run_id === runId && l.model === "retrying" && /will be retried \(server_error\): retry 1\/1/.test(l.msg));
    expect(retries.length).toBe(1);
    expect(retries[0]).toMatchObject({ status: 500, thread_id: run.thread_id });
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_provider_retries_total\{model="retrying",reason="server_error"\} 2/);
    expect(metrics).toMatch(/deerflow_model_fallbacks_total\{from="retrying",to="backup",reason="server_error"\} 2/);
  });
});

describe("GET /health and models", () => {
  it("reports a model whose use: cannot be resolved, and a fallback naming no model, as degraded", async () => {
    const healthy = await (await fetch(`${h.url}/health`)).json();
    expect(healthy.status).toBe("degraded"); // `unreachable` lists the unknown fallback `ghost`
    expect(healthy.model_errors).toEqual([{ model: "unreachable", error: "fallback 'ghost' is not a configured model" }]);
    h.writeConfig(config(fake.url).replace(/fallbacks: \[ghost, backup\]/, "fallbacks: [backup]") + "  - name: broken\n    use: nosuchpkg:Nope\n    model: x\n");
    const degraded = await (await fetch(`${h.url}/health`)).json();
    expect(degraded.status).toBe("degraded");
    expect(degraded.model_errors).toHaveLength(1);
    expect(degraded.model_errors[0].model).toBe("broken");
    expect(degraded.model_errors[0].error).toContain("nosuchpkg");
    h.writeConfig(config(fake.url).replace(/fallbacks: \[ghost, backup\]/, "fallbacks: [backup]"));
    expect(await (await fetch(`${h.url}/health`)).json()).toEqual({ status: "healthy", service: "deer-flow-gateway", sandbox: "local" });
    h.writeConfig(config(fake.url));
  });
});
