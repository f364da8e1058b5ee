import { createServer } from "node:net";
import { Writable } from "node:stream";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { createGatewayTracing, startTracing } from "../../src/observability/tracing.js";
import { useFakeOpenAI } from "../support/fake-openai.js";
import { postJson, startHarness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const fake = useFakeOpenAI();
const config = (url: string) =>
  `title:\n  enabled: false\nmodels:\n  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n    max_retries: 0\n` +
  "tools:\n  - name: ls\n    group: file:read\n    use: deerflow.sandbox.tools:ls_tool\ntool_groups:\n  - name: file:read\n";

// The fixture restores the echo reply after each test, so each test gets this one afresh.
beforeEach(() => {
  // First call: a tool call; after the tool result: the answer.
  fake.respond = (body) =>
    body.messages.some((m: any) => m.role === "tool") ? { content: "done listing" } : { toolCalls: [{ name: "ls", args: { path: "/mnt/user-data" }, id: "call_ls_1" }] };
});

const body = { input: { messages: [{ role: "user", content: "list my files" }] }, stream_mode: ["values"] };

describe("OpenTelemetry tracing", () => {
  it("records a span per request, run, model call and tool call with GenAI attributes, nested under the request", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const h = await startHarness(config(fake.url), { tracing: createGatewayTracing(provider.getTracer("test"), () => provider.shutdown()) });
    try {
      const res = await postJson(`${h.url}/runs/stream`, body, { "x-request-id": "trace-req-1" });
      const { frames } = parseSse(await res.text());
      expect(frames.at(-1)?.event).toBe("end");
      expect(frames.some((f) => f.event === "error")).toBe(false);
      const runId = frames[0].data.run_id;
      const find = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
      let request: ReadableSpan | undefined;
      for (let i = 0; i < 50 && !request; i++) {
        request = find("POST /runs/stream")[0];
        if (!request) await new Promise((r) => setTimeout(r, 20));
      }
      expect(request!.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/runs/stream", "http.response.status_code": 200, "deerflow.request_id": "trace-req-1" });
      const [run] = find("invoke_agent lead_agent");
      expect(run.parentSpanContext?.spanId).toBe(request!.spanContext().spanId);
      expect(run.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "lead_agent", "deerflow.run_id": runId, "deerflow.run.status": "success" });
      const chats = find("chat gpt-test");
      expect(chats).toHaveLength(2);
      for (const chat of chats) {
        expect(chat.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
        expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 7, "deerflow.model": "fake-gpt" });
      }
      const [tool] = find("execute_tool ls");
      expect(tool.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
      expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ls", "gen_ai.tool.call.id": "call_ls_1" });
    } finally {
      await h.close();
    }
  });

  it("never fails a run when the collector is down, and logs the export failure once", async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const lines: Record<string, any>[] = [];
    const logger = pino({ level: "debug" }, new Writable({ write(chunk, _e, cb) { for (const l of String(chunk).split("\n")) if (l.trim()) lines.push(JSON.parse(l)); cb(); } }));
    const tracing = await startTracing({ endpoint: `http://127.0.0.1:${port}/v1/traces` }, logger);
    const h = await startHarness(config(fake.url), { tracing });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await postJson(`${h.url}/runs/wait`, body);
        expect(res.status).toBe(200);
        expect((await res.json()).__error__).toBeUndefined();
      }
    } finally {
      await h.close(); // flushes the batch: the export fails against the closed port
    }
    const failures = lines.filter((l) => l.msg?.startsWith("trace export failed"));
    expect(failures).toHaveLength(1);
    expect(failures[0].level).toBe(40);
  });
});
