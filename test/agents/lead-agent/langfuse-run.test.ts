import { HumanMessage } from "@langchain/core/messages";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { _makeLeadAgent, type LeadAgentConfig } from "../../../src/agents/lead-agent/agent.js";
import { flushTracing } from "../../../src/agents/lead-agent/tracing.js";
import { parseAppConfig } from "../../../src/config/schema.js";
import { postJson, startHarness } from "../../support/harness.js";

// Langfuse tracing (@langfuse/langchain over @langfuse/otel) against a fake Langfuse OTLP endpoint, and a run
// that still succeeds when the Langfuse backend is down.
describe("Langfuse tracing of a lead-agent run", () => {
  const requests: { url: string; auth: string; body: string }[] = [];
  let server: Server;
  const dir = mkdtempSync(path.join(tmpdir(), "langfuse-"));
  const saved = { ...process.env };
  const appConfig = parseAppConfig({ models: [{ name: "s", use: "deerflow-gateway:ScriptedChatModel", model: "s" }] });
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        requests.push({ url: req.url ?? "", auth: String(req.headers.authorization ?? ""), body: raw });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    Object.assign(process.env, {
      LANGFUSE_TRACING: "true", LANGFUSE_PUBLIC_KEY: "pk-lf-test", LANGFUSE_SECRET_KEY: "sk-lf-test",
      LANGFUSE_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      DEER_FLOW_SKILLS_DIR: path.join(dir, "skills"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_HOME: dir, DEER_FLOW_EXTENSIONS_CONFIG_PATH: "",
    });
    delete process.env.LANGSMITH_TRACING;
    delete process.env.LANGCHAIN_TRACING_V2;
  });
  afterAll(async () => {
    process.env = { ...saved };
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("posts the run's spans to the configured Langfuse with the project keys", async () => {
    const config: LeadAgentConfig = { context: { thread_id: "lf-thread", user_id: "lf-user" } };
    const agent = await _makeLeadAgent(config, { appConfig });
    const handlers = agent.resolved.callbacks as { name?: string }[];
    expect(handlers.map((h) => h.name)).toContain("LangfuseCallbackHandler");
    await agent.invoke({ messages: [new HumanMessage("langfuse-marker-7")] } as never, { context: config.context, callbacks: agent.resolved.callbacks } as never);
    await flushTracing();
    const traces = requests.filter((r) => r.url === "/api/public/otel/v1/traces");
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0].auth).toBe(`Basic ${Buffer.from("pk-lf-test:sk-lf-test").toString("base64")}`);
    const all = traces.map((t) => t.body).join("\n");
    expect(all).toContain("langfuse-marker-7");
    expect(all).toContain("lf-thread");
  });

  it("never fails a run over HTTP when the Langfuse backend is down", async () => {
    const live = process.env.LANGFUSE_BASE_URL;
    process.env.LANGFUSE_BASE_URL = "http://127.0.0.1:9"; // nothing listens on the discard port
    const h = await startHarness("models:\n  - {name: s, use: 'deerflow-gateway:ScriptedChatModel', model: s}\n");
    try {
      const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
      const res = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "still works" }] } });
      expect(res.status).toBe(200);
      expect((await res.json()).messages.at(-1).content).toBe("You said: still works");
      await flushTracing(); // resolves although the export fails
    } finally {
      await h.close();
      process.env.LANGFUSE_BASE_URL = live;
    }
  });
});
