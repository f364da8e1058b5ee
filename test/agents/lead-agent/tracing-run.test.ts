import { HumanMessage } from "@langchain/core/messages";
import type { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { _makeLeadAgent, type LeadAgentConfig } from "../../../src/agents/lead-agent/agent.js";
import { parseAppConfig } from "../../../src/config/schema.js";

// Its own file: langsmith's default client is a process singleton that reads LANGSMITH_ENDPOINT once.
describe("LangSmith tracing of a lead-agent run", () => {
  const bodies: string[] = [];
  let server: Server;
  const dir = mkdtempSync(path.join(tmpdir(), "tracing-"));
  const saved = { ...process.env };
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        bodies.push(`${req.method} ${req.url}\n${raw}`);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    Object.assign(process.env, {
      LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "test-key", LANGSMITH_PROJECT: "deerflow-test",
      LANGSMITH_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      DEER_FLOW_SKILLS_DIR: path.join(dir, "skills"), DEER_FLOW_AGENTS_DIR: path.join(dir, "agents"), DEER_FLOW_HOME: dir, DEER_FLOW_EXTENSIONS_CONFIG_PATH: "",
    });
  });
  afterAll(async () => {
    process.env = { ...saved };
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("attaches one tracer at the graph root and posts each run once", async () => {
    const appConfig = parseAppConfig({ models: [{ name: "s", use: "deerflow-gateway:ScriptedChatModel", model: "s" }] });
    const config: LeadAgentConfig = { context: { thread_id: "trace-t" } };
    const agent = await _makeLeadAgent(config, { appConfig });
    const tracers = (agent.resolved.callbacks as unknown[]).filter((h) => (h as { name?: string }).name === "langchain_tracer");
    expect(tracers).toHaveLength(1);
    await agent.invoke({ messages: [new HumanMessage("trace-marker-42")] } as never, { context: config.context, callbacks: agent.resolved.callbacks } as never);
    await ((tracers[0] as LangChainTracer).client as unknown as { awaitPendingTraceBatches(): Promise<void> }).awaitPendingTraceBatches();
    const all = bodies.join("\n");
    expect(all).toContain("trace-marker-42");
    const ids = [...all.matchAll(/name="post\.([0-9a-f-]{36})"/g)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
