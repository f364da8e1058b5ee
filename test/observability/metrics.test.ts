import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

const fake = useFakeOpenAI();
let h: Harness;

const config = (url: string, extra = "") =>
  `models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\n${extra}`;

beforeAll(async () => {
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
});

/** The value of one series in a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = Object.fromEntries([...(m[3] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[4]);
  }
  return 0;
}
const scrape = async () => {
  const res = await fetch(`${h.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
};
const body = (text: string) => ({ input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values", "messages-tuple"] });

describe("GET /metrics", () => {
  it("counts runs, their durations, time to first token, model calls and tokens like the runs made", async () => {
    const before = await scrape();
    const n = 4;
    const streams = await Promise.all(Array.from({ length: n }, (_, i) => postJson(`${h.url}/runs/stream`, body(`hello ${i}`)).then((r) => r.text())));
    for (const text of streams) expect(parseSse(text).frames.at(-1)?.event).toBe("end");
    const waits = await Promise.all(Array.from({ length: 2 }, (_, i) => postJson(`${h.url}/runs/wait`, body(`wait ${i}`)).then((r) => r.json())));
    expect(waits.every((w) => !w.__error__)).toBe(true);
    await until(async () => sample(await scrape(), "deerflow_active_runs") === 0);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);

    expect(delta("deerflow_runs_started_total", { assistant_id: "lead_agent" })).toBe(n + 2);
    expect(delta("deerflow_runs_finished_total", { assistant_id: "lead_agent", status: "success" })).toBe(n + 2);
    expect(delta("deerflow_run_duration_seconds_count", { assistant_id: "lead_agent", status: "success" })).toBe(n + 2);
    expect(delta("deerflow_run_time_to_first_token_seconds_count", { assistant_id: "lead_agent" })).toBe(n + 2);
    // One model call per run (the fake answers without tool calls); the fake reports 11 input and 7 output tokens.
    expect(delta("deerflow_model_calls_total", { model: "fake-gpt" })).toBe(n + 2);
    expect(delta("deerflow_model_tokens_total", { model: "fake-gpt", direction: "input" })).toBe(11 * (n + 2));
    expect(delta("deerflow_model_tokens_total", { model: "fake-gpt", direction: "output" })).toBe(7 * (n + 2));
    expect(sample(after, "deerflow_sse_streams_open")).toBe(0);
    expect(delta("deerflow_http_requests_total", { method: "POST", route: "/runs/stream", status: "200" })).toBe(n);
    expect(delta("deerflow_http_requests_total", { method: "POST", route: "/runs/wait", status: "200" })).toBe(2);
    expect(after).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
  });

  it("labels HTTP requests by route pattern, never by raw URL", async () => {
    await fetch(`${h.url}/threads/some-unknown-thread-1`);
    await fetch(`${h.url}/api/threads/some-unknown-thread-2/uploads`);
    await fetch(`${h.url}/no/such/path/secret-token-xyz`);
    const text = await scrape();
    expect(sample(text, "deerflow_http_requests_total", { method: "GET", route: "/threads/:thread_id", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "deerflow_http_requests_total", { method: "GET", route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain("some-unknown-thread");
    expect(text).not.toContain("secret-token-xyz");
  });

  it("counts model errors by model and reason; the run answers the user and succeeds (LLM error handling)", async () => {
    const before = await scrape();
    fake.respond = () => ({ status: 400 });
    const res = await postJson(`${h.url}/runs/wait`, body("fail please"));
    expect((await res.json()).messages.at(-1).additional_kwargs.deerflow_error_fallback).toBe(true);
    const after = await scrape();
    expect(sample(after, "deerflow_model_errors_total", { model: "fake-gpt", reason: "client_error" }) - sample(before, "deerflow_model_errors_total", { model: "fake-gpt", reason: "client_error" })).toBe(1);
    expect(sample(after, "deerflow_runs_finished_total", { assistant_id: "lead_agent", status: "success" }) - sample(before, "deerflow_runs_finished_total", { assistant_id: "lead_agent", status: "success" })).toBe(1);
  });

  it("counts config reloads and failed reloads", async () => {
    const before = await scrape();
    h.writeConfig(config(fake.url, "title:\n  enabled: false\n"));
    await fetch(`${h.url}/health`);
    h.writeConfig("models: [this is: not valid");
    await fetch(`${h.url}/health`);
    await fetch(`${h.url}/health`);
    const after = await scrape();
    const d = (result: string) => sample(after, "deerflow_config_reloads_total", { result }) - sample(before, "deerflow_config_reloads_total", { result });
    expect(d("success")).toBe(1);
    expect(d("failure")).toBe(1);
    h.writeConfig(config(fake.url));
    await fetch(`${h.url}/health`);
  });

  it("keeps each app's metrics apart (no module-level registry)", async () => {
    const other = await startHarness(config(fake.url));
    try {
      const text = await (await fetch(`${other.url}/metrics`)).text();
      expect(sample(text, "deerflow_runs_started_total", { assistant_id: "lead_agent" })).toBe(0);
    } finally {
      await other.close();
    }
  });
});
