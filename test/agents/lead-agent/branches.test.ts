import { HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { DeerflowAgent } from "../../../src/agents/factory.js";
import { _makeLeadAgent, type LeadAgentConfig } from "../../../src/agents/lead-agent/agent.js";
import { parseAppConfig, type AppConfig } from "../../../src/config/schema.js";
import { closeMcpClients } from "../../../src/tools/mcp-tools.js";
import { recording } from "./recording-model.js";

const HELPER = path.join(path.dirname(fileURLToPath(import.meta.url)), "recording-model.ts");
const FIXTURES = path.resolve("test/fixtures/deerflow/skills");
const MCP_SERVER = path.resolve("test/tools/fixtures/mcp-echo-server.mjs");
const base = {
  models: [{ name: "rec", use: `${HELPER}:RecordingModel`, model: "rec-id" }, { name: "vision", use: `${HELPER}:RecordingModel`, model: "v", supports_vision: true }],
  tools: [
    { name: "bash", group: "cli", use: `${HELPER}:bashTool` },
    { name: "web_search", group: "web", use: `${HELPER}:webSearchTool` },
  ],
};
const appConfig: AppConfig = parseAppConfig(base);
let root: string;
const saved = { ...process.env };

const build = (config: LeadAgentConfig, cfg: AppConfig = appConfig) => _makeLeadAgent(config, { appConfig: cfg });
/** The tool names of a built lead agent: the compiled graph's ToolNode (no `tools` node when there are none). */
const toolNames = (agent: unknown) => ((agent as { nodes: { tools?: { bound: { tools: { name: string }[] } } } }).nodes.tools?.bound.tools ?? []).map((t) => t.name);
const systemOf = async (agent: { invoke: DeerflowAgent["invoke"] }, text = "hi") => {
  recording().calls.length = 0;
  await agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: "t1" }, context: { thread_id: "t1" } } as never);
  const first = recording().calls[0];
  return { system: SystemMessage.isInstance(first[0]) ? first[0].text : "", messages: first };
};
const writeExtensions = (doc: unknown) => writeFileSync(process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH!, JSON.stringify(doc));

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "lead-branches-"));
  process.env.DEER_FLOW_AGENTS_DIR = path.join(root, "agents");
  process.env.DEER_FLOW_SKILLS_DIR = path.join(root, "skills");
  process.env.DEER_FLOW_HOME = path.join(root, "home");
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = path.join(root, "extensions_config.json");
  for (const s of ["bootstrap", "data-analysis", "deep-research"]) cpSync(path.join(FIXTURES, s), path.join(root, "skills", "public", s), { recursive: true });
  const agent = (name: string, yaml: string, soul: string) => {
    mkdirSync(path.join(root, "agents", "default", name), { recursive: true });
    writeFileSync(path.join(root, "agents", "default", name, "config.yaml"), yaml);
    writeFileSync(path.join(root, "agents", "default", name, "SOUL.md"), soul);
  };
  agent("test", "description: t\n", "TEST SOUL MARKER");
  agent("restricted", "skills: [deep-research, ghost-skill]\ntool_groups: [web]\n", "Restricted soul");
  agent("noskills", "skills: []\n", "No skills soul");
  writeFileSync(path.join(root, "agents", "SOUL.md"), "GLOBAL SOUL MARKER");
});
beforeEach(() => writeExtensions({ mcpServers: {}, skills: {} }));
afterAll(async () => {
  await closeMcpClients();
  rmSync(root, { recursive: true, force: true });
  process.env = { ...saved };
});

describe("bootstrap branch (agent-factory.md §2.3, AF-030)", () => {
  it("gets setup_agent but never update_agent, only the bootstrap skill, no agent name in the prompt and the global soul", async () => {
    const config: LeadAgentConfig = { configurable: { agent_name: "game", is_bootstrap: true } };
    const agent = await build(config);
    const names = toolNames(agent);
    expect(names).toContain("setup_agent");
    expect(names).not.toContain("update_agent");
    expect(agent.resolved.metadata).toMatchObject({ agent_name: "game", available_skills: ["bootstrap"], tool_groups: null, reasoning_effort: null });
    const { system } = await systemOf(agent);
    expect(system).toContain("<name>bootstrap</name>");
    expect(system).not.toContain("<name>data-analysis</name>");
    expect(system).toContain("You are DeerFlow 2.0,");
    expect(system).not.toContain("<self_update>\n");
    expect(system).toContain("<soul>\nGLOBAL SOUL MARKER\n</soul>");
  });

  it("does not load the agent's config even when the agent exists", async () => {
    const config: LeadAgentConfig = { configurable: { agent_name: "restricted", is_bootstrap: true } };
    const agent = await build(config);
    expect(toolNames(agent)).toContain("bash");
    expect(agent.resolved.metadata.tool_groups).toBeNull();
  });
});

describe("custom and default branches: tools and skills", () => {
  it("orders a custom agent's tools: configured, built-ins, update_agent, describe_skill (AF-032)", async () => {
    const cfg = parseAppConfig({ ...base, skills: { deferred_discovery: true } });
    expect(toolNames(await build({ context: { agent_name: "test" } }, cfg))).toEqual(["bash", "web_search", "present_files", "ask_clarification", "list_uploaded_files", "update_agent", "describe_skill"]);
  });

  it("gates update_agent: not on github, yes on other channels, never for the default agent (AF-033)", async () => {
    expect(toolNames(await build({ context: { agent_name: "test", channel_name: "github" } }))).not.toContain("update_agent");
    expect(toolNames(await build({ context: { agent_name: "test", channel_name: "github" } }))).toContain("bash");
    expect(toolNames(await build({ context: { agent_name: "test", channel_name: "telegram" } }))).toContain("update_agent");
    expect(toolNames(await build({}))).not.toContain("update_agent");
  });

  it("lets the skill allowlist limit skills but never ordinary tools (AF-034)", async () => {
    const config: LeadAgentConfig = { context: { agent_name: "restricted" } };
    const agent = await build(config);
    expect(toolNames(agent)).toEqual(["web_search", "present_files", "ask_clarification", "list_uploaded_files", "update_agent"]);
    expect(agent.resolved.metadata.available_skills).toEqual(["deep-research", "ghost-skill"]);
    const { system } = await systemOf(agent);
    expect(system).toContain("<name>deep-research</name>");
    expect(system).not.toContain("<name>data-analysis</name>");
  });

  it("never lets a skill's allowed-tools clamp the default agent's tools (AF-034 a)", async () => {
    mkdirSync(path.join(root, "skills", "custom", "narrow"), { recursive: true });
    writeFileSync(path.join(root, "skills", "custom", "narrow", "SKILL.md"), "---\nname: narrow\ndescription: d\nallowed-tools: [web_search]\n---\n");
    try {
      expect(toolNames(await build({}))).toEqual(["bash", "web_search", "present_files", "ask_clarification", "list_uploaded_files"]);
    } finally {
      rmSync(path.join(root, "skills", "custom"), { recursive: true, force: true });
    }
  });

  it("renders no skills section for skills: [] and every enabled skill for the default agent", async () => {
    expect((await systemOf(await build({ context: { agent_name: "noskills" } }))).system).not.toContain("<available_skills>");
    writeExtensions({ skills: { "deep-research": { enabled: false } } });
    const { system } = await systemOf(await build({}));
    for (const s of ["bootstrap", "data-analysis"]) expect(system).toContain(`<name>${s}</name>`);
    expect(system.slice(system.indexOf("<disabled_skills>"))).toContain("deep-research");
    expect(system).toContain("<soul>\nGLOBAL SOUL MARKER\n</soul>");
  });

  it("activates a /skill for the turn and answers without the model for an unknown one", async () => {
    const agent = await build({});
    const { messages } = await systemOf(agent, "/data-analysis sum column B");
    expect(messages.some((m) => m.additional_kwargs?.slash_skill_activation)).toBe(true);
    recording().calls.length = 0;
    const out = (await agent.invoke({ messages: [new HumanMessage("/no-such-skill go")] } as never, { context: { thread_id: "t2" } } as never)) as unknown as { messages: BaseMessage[] };
    expect(recording().calls).toHaveLength(0);
    expect(out.messages.at(-1)?.content).toBe("Skill `/no-such-skill` is not installed.");
  });

  it("adds view_image for a vision model, memory tools in tool mode, and task when subagents are on", async () => {
    expect(toolNames(await build({ context: { model_name: "vision" } }))).toContain("view_image");
    const memory = parseAppConfig({ ...base, memory: { mode: "tool" } });
    const withMemory = await build({}, memory);
    expect(toolNames(withMemory).slice(-4)).toEqual(["memory_search", "memory_add", "memory_update", "memory_delete"]);
    expect((await systemOf(withMemory)).system).toContain("<memory_tool_system>");
    const sub = await build({ context: { subagent_enabled: true, max_concurrent_subagents: 2 } });
    expect(toolNames(sub)).toContain("task");
    expect((await systemOf(sub)).system).toContain("MAXIMUM 2 `task` CALLS PER RESPONSE");
  });

  it("takes the concurrent-subagent limit from subagents.max_concurrent unless the request sets one", async () => {
    const cfg = parseAppConfig({ ...base, subagents: { max_concurrent: 1 } });
    expect((await systemOf(await build({ context: { subagent_enabled: true } }, cfg))).system).toContain("MAXIMUM 1 `task` CALLS PER RESPONSE");
    expect((await systemOf(await build({ context: { subagent_enabled: true, max_concurrent_subagents: 4 } }, cfg))).system).toContain("MAXIMUM 4 `task` CALLS PER RESPONSE");
  });
});

describe("MCP tools and tool_search in the lead agent", () => {
  const echo = { type: "stdio", command: process.execPath, args: [MCP_SERVER] };

  it("binds MCP tools directly, and defers them behind tool_search when tool_search.enabled", async () => {
    writeExtensions({ mcpServers: { files: echo } });
    expect(toolNames(await build({}))).toEqual(["bash", "web_search", "present_files", "ask_clarification", "list_uploaded_files", "files_echo", "files_add"]);
    const cfg = parseAppConfig({ ...base, tool_search: { enabled: true } });
    const agent = await build({}, cfg);
    expect(toolNames(agent).slice(-3)).toEqual(["files_echo", "files_add", "tool_search"]);
    recording().calls.length = 0;
    const { system } = await systemOf(agent);
    expect(system).toContain("<available-deferred-tools>\nfiles_add\nfiles_echo\n</available-deferred-tools>");
  });

  it("keeps building when an MCP server is broken", async () => {
    writeExtensions({ mcpServers: { broken: { type: "stdio", command: process.execPath, args: ["-e", "process.exit(2)"] }, files: echo } });
    const names = toolNames(await build({}));
    expect(names).toContain("files_echo");
    expect(names.some((n) => n.startsWith("broken_"))).toBe(false);
  });

  it("keeps the last good extensions config when the file becomes invalid JSON", async () => {
    writeExtensions({ mcpServers: { files: echo } });
    await build({});
    writeFileSync(process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH!, "{ not json");
    expect(toolNames(await build({}))).toContain("files_echo");
  });
});

describe("setup_agent through a bootstrap agent", () => {
  it("writes the agent files when the model calls setup_agent", async () => {
    const agent = await build({ configurable: { agent_name: "chef", is_bootstrap: true } });
    const tool = (agent.nodes.tools as unknown as { bound: { tools: { name: string; invoke: Function }[] } }).bound.tools.find((t) => t.name === "setup_agent")!;
    const out = await tool.invoke({ name: "setup_agent", args: { soul: "Cooks well.", description: "A chef" }, id: "c1", type: "tool_call" }, { context: { agent_name: "chef" } });
    expect((out as { update: { created_agent_name: string } }).update.created_agent_name).toBe("chef");
    expect(readFileSync(path.join(root, "agents", "default", "chef", "SOUL.md"), "utf8")).toBe("Cooks well.");
    expect((out as { update: { messages: ToolMessage[] } }).update.messages[0].content).toBe("Agent 'chef' created successfully!");
  });
});
