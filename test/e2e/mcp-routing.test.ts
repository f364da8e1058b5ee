import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeMcpClients } from "../../src/tools/mcp-tools.js";
import { echoReply, systemText, useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 46 item 3: MCP routing hints (extensions_config.json `routing`) promote deferred MCP tools as upstream
// does: the latest user message's keywords bind the tool on that very model call, without a tool_search round
// trip, and the promotion is kept in the thread. A real stdio MCP server, the fake OpenAI server, over HTTP.
const ENV_KEYS = ["DEER_FLOW_EXTENSIONS_CONFIG_PATH"] as const;
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
const work = mkdtempSync(path.join(tmpdir(), "mcp-routing-"));
const MCP_SERVER = path.resolve("test/tools/fixtures/mcp-echo-server.mjs");
const fake = useFakeOpenAI();
let h: Harness;

const config = (url: string) =>
  "title:\n  enabled: false\nmemory:\n  enabled: false\ntool_search:\n  enabled: true\n  auto_promote_top_k: 1\n" +
  `models:\n  - name: main\n    use: langchain_openai:ChatOpenAI\n    model: main-id\n    api_key: sk-test\n    base_url: ${url}\n    timeout: 5\n`;

beforeAll(async () => {
  writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({
    mcpServers: {
      files: {
        type: "stdio", command: process.execPath, args: [MCP_SERVER], env: { ECHO_TAG: "mcp" },
        routing: { mode: "prefer", priority: 10, keywords: ["sum"] },
        tools: { echo: { routing: { priority: 50, keywords: ["Repeat back"] } } },
      },
    },
    skills: {},
  }));
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = path.join(work, "extensions_config.json");
  h = await startHarness(config(fake.url));
});
afterAll(async () => {
  await h.close();
  await closeMcpClients();
  for (const k of ENV_KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(work, { recursive: true, force: true });
});

function script(replies: FakeReply[]) {
  let n = 0;
  fake.respond = (body) => replies[n++] ?? echoReply(body);
}
const toolNames = (i: number): string[] => (fake.requests[i].body.tools ?? []).map((t: any) => t.function.name);
async function run(text: string, threadId?: string) {
  const tid = threadId ?? (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
  const res = await postJson(`${h.url}/threads/${tid}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"] });
  expect(res.status).toBe(200);
  const values = parseSse(await res.text()).frames.filter((f) => f.event === "values").at(-1)!.data;
  return { tid: tid as string, values };
}

describe("MCP routing hints", () => {
  it("lists the routed tools in the prompt, highest priority first, pointing deferred ones at tool_search", async () => {
    script([{ content: "hi" }]);
    await run("hello");
    const system = systemText(fake.requests[0].body);
    expect(system).toContain([
      "<mcp_routing_hints>",
      "When the user's request involves Repeat back:",
      "  use `tool_search` to fetch `files_echo`, then prefer that MCP tool.",
      "When the user's request involves sum:",
      "  use `tool_search` to fetch `files_add`, then prefer that MCP tool.",
      "</mcp_routing_hints>",
    ].join("\n"));
    // No keyword in the message: the deferred tools stay hidden.
    expect(toolNames(0)).not.toContain("files_echo");
    expect(toolNames(0)).toContain("tool_search");
  });

  it("binds the matching deferred tool on that model call (top_k 1: the higher priority), runs it, and keeps it promoted", async () => {
    script([{ toolCalls: [{ name: "files_echo", args: { text: "ping" } }] }, { content: "done" }]);
    const { tid, values } = await run("please REPEAT BACK ping and sum nothing");
    expect(toolNames(0)).toContain("files_echo");
    expect(toolNames(0)).not.toContain("files_add");
    expect(values.messages.find((m: any) => m.type === "tool")?.content).toContain("mcp: ping");
    expect(values.promoted).toMatchObject({ names: ["files_echo"] });
    // The promotion is written beside the model's message, not instead of it or twice.
    expect(values.messages.map((m: any) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
    expect(values.messages.at(-1).content).toBe("done");
    // A later turn without the keyword still has it (the promotion is in the thread, as a tool_search one).
    script([{ content: "ok" }]);
    await run("thanks", tid);
    expect(toolNames(0)).toContain("files_echo");
  });
});
