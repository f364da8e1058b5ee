import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

const waitFor = (check: () => boolean) => until(async () => check());

const fake = useFakeOpenAI();
let h: Harness;
let logs: ReturnType<typeof captureLogs>;

beforeAll(async () => {
  logs = captureLogs();
  h = await startHarness(`models:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${fake.url}\n    max_retries: 0\n`);
});
afterAll(async () => {
  await h.close();
  logs.restore();
});

const body = (text: string) => ({ input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"] });

describe("request ids", () => {
  it("echoes a valid x-request-id and puts it on the request's log line", async () => {
    const res = await fetch(`${h.url}/api/models`, { headers: { "x-request-id": "req-abc_123.4:5" } });
    expect(res.headers.get("x-request-id")).toBe("req-abc_123.4:5");
    await waitFor(() => logs.lines().some((l) => l.msg === "request completed" && l.request_id === "req-abc_123.4:5")).catch((e) => { console.log(logs.lines().filter((l) => l.msg === "request completed")); throw e; });
  });

  it("replaces an unsafe or overlong id with a generated UUID, also on errors", async () => {
    for (const bad of ["has space", "x".repeat(129), "quote\"d", "semi;colon"]) {
      const res = await fetch(`${h.url}/threads/nope-${Math.random().toString(36).slice(2)}`, { headers: { "x-request-id": bad } });
      expect(res.status).toBe(404);
      const id = res.headers.get("x-request-id");
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
    const none = await fetch(`${h.url}/health`);
    expect(none.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("is on the SSE response, in the run's metadata, and on the run's and token-usage log lines with the run id", async () => {
    const res = await postJson(`${h.url}/runs/stream`, body("hello ids"), { "x-request-id": "stream-req-1" });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    expect(res.headers.get("x-request-id")).toBe("stream-req-1");
    const { frames } = parseSse(await res.text());
    const { run_id: runId, thread_id: threadId } = frames[0].data;
    expect(frames.at(-1)?.event).toBe("end");

    const run = await (await fetch(`${h.url}/threads/${threadId}/runs/${runId}`)).json();
    expect(run.metadata.request_id).toBe("stream-req-1");

    await waitFor(() => logs.lines().some((l) => l.msg === "run finished" && l.run_id === runId));
    const finished = logs.lines().find((l) => l.msg === "run finished" && l.run_id === runId)!;
    expect(finished.request_id).toBe("stream-req-1");
    const usage = logs.lines().find((l) => String(l.msg).startsWith("LLM token usage") && l.run_id === runId);
    expect(usage).toBeDefined();
    expect(usage!.request_id).toBe("stream-req-1");
    expect(usage!.thread_id).toBe(threadId);
  });
});
