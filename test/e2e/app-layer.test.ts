import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { closeMcpClients } from "../../src/tools/mcp-tools.js";
import { echoReply, useFakeOpenAI, systemText } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse, type SseFrame } from "../support/sse.js";

// The three lead-agent branches end to end: HTTP in, @langchain/openai out to a fake OpenAI server, a real
// stdio MCP server, skills on disk. Assertions are made on what the model was sent and what the client got.
const ENV_KEYS = ["DEER_FLOW_SKILLS_DIR", "DEER_FLOW_EXTENSIONS_CONFIG_PATH"] as const;
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
const work = mkdtempSync(path.join(tmpdir(), "app-layer-"));
const MCP_SERVER = path.resolve("test/tools/fixtures/mcp-echo-server.mjs");
const fake = useFakeOpenAI();
let h: Harness;

const config = (url: string) => `models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: gpt-test
    api_key: sk-test
    base_url: ${url}
agents_api:
  enabled: true
`;

beforeAll(async () => {
  for (const s of ["bootstrap", "data-analysis"]) cpSync(path.resolve("test/fixtures/deerflow/skills", s), path.join(work, "skills", "public", s), { recursive: true });
  writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({
    mcpServers: {
      files: { type: "stdio", command: process.execPath, args: [MCP_SERVER], env: { ECHO_TAG: "mcp" } },
      broken: { type: "stdio", command: process.execPath, args: ["-e", "process.exit(1)"] },
    },
    skills: {},
  }));
  process.env.DEER_FLOW_SKILLS_DIR = path.join(work, "skills");
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

const toolNames = (body: Record<string, any>): string[] => (body.tools ?? []).map((t: any) => t.function.name);
const lastUser = (body: Record<string, any>) => body.messages.filter((m: any) => m.role === "user").at(-1)?.content;

/** Creates a thread and streams one run on it; returns the SSE frames. */
async function run(text: string, extra: Record<string, unknown> = {}): Promise<SseFrame[]> {
  const thread = await (await postJson(`${h.url}/threads`, {})).json();
  const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, {
    input: { messages: [{ role: "user", content: text }] },
    stream_mode: ["values", "custom"],
    ...extra,
  });
  expect(res.status).toBe(200);
  return parseSse(await res.text()).frames;
}
const finalValues = (frames: SseFrame[]) => frames.filter((f) => f.event === "values").at(-1)!.data;

describe("default branch over HTTP", () => {
  it("sends the static prompt with skills, the date at its end, the MCP tools and the user's text", async () => {
    const frames = await run("hello there");
    expect(frames.some((f) => f.event === "error")).toBe(false);
    expect(finalValues(frames).messages.at(-1)).toMatchObject({ type: "ai", content: "Echo: hello there" });
    const body = fake.requests[0].body;
    const system = systemText(body);
    expect(body.messages[0].role).toBe("system");
    expect(system).toContain("You are DeerFlow 2.0,");
    expect(system).toContain("<name>bootstrap</name>");
    expect(system).toContain("<location>/mnt/skills/public/data-analysis/SKILL.md</location>");
    expect(system).toMatch(/<system-reminder>\n<current_date>\d{4}-\d\d-\d\d, \w+day<\/current_date>\n<\/system-reminder>$/);
    expect(body.messages.filter((m: any) => m.role === "system")).toHaveLength(1);
    expect(lastUser(body)).toBe("hello there");
    expect(toolNames(body)).toEqual(["present_files", "ask_clarification", "list_uploaded_files", "files_echo", "files_add"]);
  });

  it("runs an MCP tool the model calls (the broken MCP server does not matter)", async () => {
    fake.respond = (body) => (body.messages.at(-1).role === "tool" ? { content: `got ${body.messages.at(-1).content}` } : { toolCalls: [{ name: "files_echo", args: { text: "ping" } }] });
    const frames = await run("use the echo tool");
    const messages = finalValues(frames).messages;
    expect(messages.find((m: any) => m.type === "tool")?.content).toContain("mcp: ping");
    expect(messages.at(-1).content).toContain("mcp: ping");
  });

  it("activates a /skill for the turn and refuses an unknown one without calling the model", async () => {
    await run("/data-analysis sum column B");
    const sent = fake.requests[0].body.messages;
    const activation = sent.find((m: any) => m.role === "user" && String(m.content).includes("<slash_skill_activation>"));
    expect(String(activation.content)).toContain("<user_request>\nsum column B\n</user_request>");
    expect(String(activation.content)).toContain("# Data Analysis Skill");
    fake.requests.length = 0;
    const frames = await run("/no-such-skill do it");
    expect(fake.requests).toHaveLength(0);
    expect(finalValues(frames).messages.at(-1).content).toBe("Skill `/no-such-skill` is not installed.");
  });

  it("runs a task subagent built by the same factory and streams its progress as custom events", async () => {
    fake.respond = (body) => {
      if (systemText(body).includes("general-purpose subagent")) return { content: "child found 3 cats" };
      if (body.messages.at(-1).role === "tool") return { content: "parent done" };
      return { toolCalls: [{ name: "task", args: { description: "count cats", prompt: "How many cats?", subagent_type: "general-purpose" }, id: "task-1" }] };
    };
    const frames = await run("delegate this", { context: { subagent_enabled: true } });
    const custom = frames.filter((f) => f.event === "custom").map((f) => f.data);
    expect(custom.map((e) => e.type)).toEqual(expect.arrayContaining(["task_started", "task_running", "task_completed"]));
    expect(custom.find((e) => e.type === "task_completed")).toMatchObject({ task_id: "task-1", result: "child found 3 cats" });
    const child = fake.requests.find((r) => systemText(r.body).includes("general-purpose subagent"))!.body;
    expect(toolNames(child)).not.toContain("task");
    expect(toolNames(child)).not.toContain("ask_clarification");
    expect(lastUser(child)).toBe("How many cats?");
    const parent = fake.requests[0].body;
    expect(systemText(parent)).toContain("MAXIMUM 3 `task` CALLS PER RESPONSE");
    expect(finalValues(frames).messages.at(-1).content).toBe("parent done");
  });
});

describe("custom agent branch over HTTP", () => {
  it("sends the agent's SOUL and self-update section, filters tools by group, and update_agent rewrites its files", async () => {
    const created = await postJson(`${h.url}/api/agents`, { name: "reviewer", description: "reviews", soul: "REVIEWER SOUL MARKER", skills: ["data-analysis"] });
    expect(created.status).toBe(201);
    fake.respond = (body) =>
      body.messages.at(-1).role === "tool" ? { content: "updated myself" } : { toolCalls: [{ name: "update_agent", args: { description: "reviews code carefully", model: "null" } }] };
    const frames = await run("be more careful", { context: { agent_name: "reviewer" } });
    expect(frames.some((f) => f.event === "error")).toBe(false);
    const body = fake.requests[0].body;
    const system = systemText(body);
    expect(system).toContain("<soul>\nREVIEWER SOUL MARKER\n</soul>");
    expect(system).toContain('You are the custom agent "reviewer"');
    expect(system).toContain("<name>data-analysis</name>");
    expect(system).not.toContain("<name>bootstrap</name>");
    expect(toolNames(body)).toContain("update_agent");
    const tool = finalValues(frames).messages.find((m: any) => m.type === "tool");
    expect(tool.content).toContain("Agent 'reviewer' updated successfully. Changed: description.");
    const onDisk = parseYaml(readFileSync(path.join(h.dir, "agents", "default", "reviewer", "config.yaml"), "utf8"));
    expect(onDisk).toMatchObject({ name: "reviewer", description: "reviews code carefully", skills: ["data-analysis"] });
  });

  it("fails the run with an error naming an unknown agent, and rejects an invalid name before streaming", async () => {
    const frames = await run("hi", { context: { agent_name: "ghost-agent" } });
    const error = frames.find((f) => f.event === "error");
    expect(error?.data.message).toContain("Agent 'ghost-agent' not found");
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    const bad = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: { messages: [{ role: "user", content: "x" }] }, context: { agent_name: "../evil" } });
    expect(bad.status).toBe(422);
    expect((await bad.json()).detail).toContain("Invalid agent name");
  });
});

describe("bootstrap branch over HTTP", () => {
  it("creates the new agent with setup_agent, and the next run of that agent carries its SOUL", async () => {
    fake.respond = (body) =>
      body.messages.at(-1).role === "tool"
        ? { content: "Your agent is ready." }
        : { toolCalls: [{ name: "setup_agent", args: { soul: "CHEF SOUL MARKER: cook with care.", description: "A cooking assistant" } }] };
    const frames = await run("Make me a cooking agent", { context: { is_bootstrap: true, agent_name: "chef" } });
    expect(frames.some((f) => f.event === "error")).toBe(false);
    const body = fake.requests[0].body;
    expect(toolNames(body)).toContain("setup_agent");
    expect(toolNames(body)).not.toContain("update_agent");
    const system = systemText(body);
    expect(system).toContain("<name>bootstrap</name>");
    expect(system).not.toContain("<name>data-analysis</name>");
    expect(system).toContain("You are DeerFlow 2.0,");
    const values = finalValues(frames);
    expect(values.created_agent_name).toBe("chef");
    expect(values.messages.at(-1).content).toBe("Your agent is ready.");
    expect(existsSync(path.join(h.dir, "agents", "default", "chef", "config.yaml"))).toBe(true);

    fake.requests.length = 0;
    fake.respond = echoReply;
    await run("hi chef", { context: { agent_name: "chef" } });
    expect(systemText(fake.requests[0].body)).toContain("<soul>\nCHEF SOUL MARKER: cook with care.\n</soul>");
  });
});

describe("bad input over HTTP", () => {
  it("leaves out a tool whose use: cannot be resolved, with a warning naming it, and fails a run whose model cannot be resolved", async () => {
    const { captureLogs } = await import("../support/capture-logs.js");
    const logs = captureLogs();
    try {
      h.writeConfig(`${config(fake.url)}tools:\n  - name: web_search\n    group: web\n    use: deerflow.tools.custom_search:web_search_tool\n`);
      const frames = await run("still works");
      expect(frames.some((f) => f.event === "error")).toBe(false);
      expect(toolNames(fake.requests[0].body)).not.toContain("web_search");
      expect(logs.messages().some((m) => m.includes("tool 'web_search' (use: 'deerflow.tools.custom_search:web_search_tool') is unavailable"))).toBe(true);
    } finally {
      logs.restore();
    }
    h.writeConfig(`models:\n  - name: broken\n    use: no_such_provider_pkg:ChatThing\n    model: x\n`);
    const frames = await run("hi");
    expect(frames.find((f) => f.event === "error")?.data.message).toContain("Could not import module no_such_provider_pkg");
    h.writeConfig(config(fake.url));
  });
});
