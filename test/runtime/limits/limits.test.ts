import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { installErrorHandlers } from "../../../routes/errors.js";
import { DEFAULT_PRINCIPAL, type Principal } from "../../../src/auth/principal.js";
import { parseAppConfig } from "../../../src/config/schema.js";
import { registerRateLimit } from "../../../src/runtime/limits/rate-limit.js";
import { UsageLedger } from "../../../src/runtime/limits/usage-ledger.js";
import { useFakeOpenAI, echoReply } from "../../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../../support/harness.js";
import { until } from "../../support/wait.js";

const fake = useFakeOpenAI();
const model = (url: string) => `models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\ntitle:\n  enabled: false\nmemory:\n  enabled: false\n`;
const body = (text: string, extra: Record<string, unknown> = {}) => ({ input: { messages: [{ role: "user", content: text }] }, ...extra });

describe("request rate limits", () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  it("are off by default", async () => {
    h = await startHarness(model(fake.url));
    const statuses = await Promise.all(Array.from({ length: 30 }, () => fetch(`${h.url}/api/models`).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
  });

  it("answer 429 with Retry-After and a clear detail over the limit, and never limit /health or /metrics", async () => {
    h = await startHarness(model(fake.url) + "limits:\n  rate_limit:\n    enabled: true\n    max: 3\n    window_seconds: 60\n");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${h.url}/api/models`)).status);
    expect(statuses).toEqual([200, 200, 200]);
    const refused = await postJson(`${h.url}/runs/wait`, body("should not run"), { "x-request-id": "limited-1" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(refused.headers.get("x-request-id")).toBe("limited-1");
    const detail = (await refused.json()).detail;
    expect(detail).toMatch(/^Rate limit exceeded: at most 3 requests per 60 s for this user; retry in \d+ s$/);
    expect(fake.requests).toHaveLength(0);
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_limit_rejections_total\{limit="rate"\} 1/);
  });

  it("keep one budget per API key, so one key's flood does not limit another", async () => {
    const app = Fastify();
    const config = parseAppConfig({ limits: { rate_limit: { enabled: true, max: 5, window_seconds: 60 } } });
    app.decorateRequest("principal", null);
    app.addHook("onRequest", async (request) => {
      const key = request.headers["x-api-key"];
      request.principal = typeof key === "string" ? ({ id: "same-user", username: "u", role: "user", source: "api_key", apiKeyId: key } satisfies Principal) : DEFAULT_PRINCIPAL;
    });
    installErrorHandlers(app as never);
    await registerRateLimit(app as never, { getAppConfig: () => config });
    app.get("/thing", async () => ({ ok: true }));
    // Over a real socket: same-tick inject() calls would all read the store's shared counter after the last increment.
    const url = await app.listen({ host: "127.0.0.1", port: 0 });
    const hit = (key: string) => fetch(`${url}/thing`, { headers: { "x-api-key": key } }).then((r) => r.status);
    const flood = await Promise.all(Array.from({ length: 20 }, () => hit("key-a")));
    expect(flood.filter((s) => s === 200)).toHaveLength(5);
    expect(flood.filter((s) => s === 429)).toHaveLength(15);
    const other = await Promise.all(Array.from({ length: 5 }, () => hit("key-b")));
    expect(other).toEqual([200, 200, 200, 200, 200]);
    expect(await hit("key-b")).toBe(429);
    const res = await fetch(`${url}/thing`, { headers: { "x-api-key": "key-a" } });
    expect((await res.json()).detail).toMatch(/for this API key/);
    await app.close();
  });
});

describe("concurrent runs per user", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  it("refuses a run over the cap with 429 and Retry-After, starting nothing, and admits again once a run ends", async () => {
    h = await startHarness(model(fake.url) + "limits:\n  max_concurrent_runs_per_user: 1\n");
    fake.respond = (b) => ({ ...echoReply(b), delayMs: 400 });
    const first = await postJson(`${h.url}/runs`, body("slow one"));
    expect(first.status).toBe(200);
    const run = await first.json();
    const refused = await postJson(`${h.url}/runs/stream`, body("second", { config: { configurable: { thread_id: "never-created" } } }));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect((await refused.json()).detail).toBe("Too many concurrent runs: 1 of 1 allowed per user are in flight; retry when one has finished");
    expect((await fetch(`${h.url}/threads/never-created`)).status).toBe(404);
    const usage = await (await fetch(`${h.url}/api/usage`)).json();
    expect(usage.active_runs).toBe(1);
    expect(usage.max_concurrent_runs).toBe(1);
    await fetch(`${h.url}/threads/${run.thread_id}/runs/${run.run_id}/join`);
    await until(async () => (await (await fetch(`${h.url}/api/usage`)).json()).active_runs === 0);
    fake.respond = echoReply;
    expect((await postJson(`${h.url}/runs/wait`, body("now fine"))).status).toBe(200);
  });
});

describe("daily token quotas and the usage ledger", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("counts every model call's tokens exactly under concurrent runs", async () => {
    h = await startHarness(model(fake.url));
    const n = 12;
    const url = h.url;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => postJson(`${url}/runs/wait`, body(`parallel ${i}`)).then((r) => r.json())));
    expect(results.every((r) => !r.__error__)).toBe(true);
    const usage = await (await fetch(`${h.url}/api/usage`)).json();
    // The fake reports 11 input and 7 output tokens per call, one call per run.
    expect(usage.today).toMatchObject({ input_tokens: 11 * n, output_tokens: 7 * n, total_tokens: 18 * n, model_calls: n });
    expect(usage.daily_token_quota).toBeNull();
    expect(usage.days).toHaveLength(1);
    expect(usage.user_id).toBe("default");
  });

  it("refuses runs once the quota is spent, with Retry-After until UTC midnight, and reports the remainder", async () => {
    h = await startHarness(model(fake.url) + "limits:\n  daily_token_quota: 30\n");
    expect((await postJson(`${h.url}/runs/wait`, body("one"))).status).toBe(200);
    let usage = await (await fetch(`${h.url}/api/usage`)).json();
    expect(usage.remaining_tokens).toBe(12);
    expect((await postJson(`${h.url}/runs/wait`, body("two"))).status).toBe(200);
    const refused = await postJson(`${h.url}/runs/stream`, body("three"));
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect((await refused.json()).detail).toBe("Daily token quota exhausted: 36 of 30 tokens used today (UTC); it resets at the next UTC midnight");
    expect(fake.requests).toHaveLength(2);
    usage = await (await fetch(`${h.url}/api/usage?days=7`)).json();
    expect(usage).toMatchObject({ daily_token_quota: 30, remaining_tokens: 0, today: { total_tokens: 36 } });
    expect(new Date(usage.resets_at).getUTCHours()).toBe(0);
    expect((await fetch(`${h.url}/api/usage?days=0`)).status).toBe(422);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/deerflow_limit_rejections_total\{limit="token_quota"\} 1/);
  });

  it("never loses an update when two connections add to the same file", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ledger-"));
    try {
      const file = path.join(dir, "db.sqlite");
      const a = new UsageLedger(new Database(file));
      const b = new UsageLedger(new Database(file));
      for (let i = 0; i < 200; i++) (i % 2 ? a : b).add("u1", { input: 3, output: 2 }, "2026-01-01");
      expect(a.get("u1", "2026-01-01")).toEqual({ day: "2026-01-01", input_tokens: 600, output_tokens: 400, total_tokens: 1000, model_calls: 200 });
      expect(b.get("u2", "2026-01-01").total_tokens).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
