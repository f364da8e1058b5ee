import { ToolMessage } from "@langchain/core/messages";
import { isCommand } from "@langchain/langgraph";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { AgentStore } from "../../src/config/agent-store.js";
import { parseAppConfig } from "../../src/config/schema.js";
import { AGENT_WRITES_DISABLED, agentWritesDisabled, createSetupAgentTool } from "../../src/tools/builtins/setup-agent.js";
import { createUpdateAgentTool } from "../../src/tools/builtins/update-agent.js";

let dir: string;
let store: AgentStore;
const appConfig = parseAppConfig({ agents_api: { enabled: true }, models: [{ name: "m1", use: "langchain_openai:ChatOpenAI", model: "x" }, { name: "m2", use: "langchain_openai:ChatOpenAI", model: "y" }] });
const KNOWN = ["data-analysis", "deep-research"];
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "agent-tools-"));
  store = new AgentStore(dir);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

type Tool = { invoke(input: unknown, config?: unknown): Promise<unknown> };
const run = async (t: Tool, args: Record<string, unknown>, context: Record<string, unknown>) => t.invoke({ name: "t", args, id: "call-1", type: "tool_call" }, { context });
const content = (out: unknown) => String((out as ToolMessage).content);
const doc = (name: string) => parseYaml(readFileSync(path.join(dir, "default", name, "config.yaml"), "utf8"));
const soul = (name: string) => readFileSync(path.join(dir, "default", name, "SOUL.md"), "utf8");

describe("setup_agent (agent-factory.md §7)", () => {
  const setup = () => createSetupAgentTool({ store, agentsDir: dir, knownSkills: KNOWN }) as unknown as Tool;

  it("creates the named agent's config.yaml and SOUL.md and reports created_agent_name", async () => {
    const out = await run(setup(), { soul: "# Game master\nRun fair games.", description: "Runs tabletop games", skills: ["deep-research"] }, { agent_name: "Game", user_id: "default" });
    expect(isCommand(out)).toBe(true);
    const update = (out as unknown as { update: { created_agent_name: string; messages: ToolMessage[] } }).update;
    expect(update.created_agent_name).toBe("game");
    expect(String(update.messages[0].content)).toBe("Agent 'game' created successfully!");
    expect(doc("game")).toEqual({ name: "game", description: "Runs tabletop games", skills: ["deep-research"] });
    expect(soul("game")).toBe("# Game master\nRun fair games.");
  });

  it("updates an agent that already exists (upsert)", async () => {
    await run(setup(), { soul: "v1", description: "first" }, { agent_name: "game" });
    await run(setup(), { soul: "v2", description: "second" }, { agent_name: "game" });
    expect(doc("game").description).toBe("second");
    expect(soul("game")).toBe("v2");
  });

  it("refuses a blank soul, an invalid name and unknown skills without writing", async () => {
    const blank = await run(setup(), { soul: "  \n", description: "d" }, { agent_name: "game" });
    expect(content(blank)).toContain("soul content is empty");
    expect((blank as ToolMessage).status).toBe("error");
    expect(content(await run(setup(), { soul: "s", description: "d" }, { agent_name: "../evil" }))).toContain("Invalid agent name");
    expect(content(await run(setup(), { soul: "s", description: "d", skills: ["ghost-skill"] }, { agent_name: "game" }))).toContain("Unknown skill 'ghost-skill'");
    expect(existsSync(path.join(dir, "default", "game"))).toBe(false);
  });

  it("saves the default agent's SOUL.md when the run names no agent", async () => {
    expect(content(await run(setup(), { soul: "Global soul", description: "d" }, {}))).toContain("SOUL.md saved");
    expect(readFileSync(path.join(dir, "SOUL.md"), "utf8")).toBe("Global soul");
  });
});

describe("update_agent (agent-factory.md §7)", () => {
  const update = () => createUpdateAgentTool({ store, appConfig, knownSkills: KNOWN }) as unknown as Tool;
  beforeEach(async () => {
    await store.create({ name: "helper", description: "old", model: "m1", skills: ["data-analysis"], soul: "Old soul" });
  });

  it("rewrites only the given fields, keeps the rest and names what changed", async () => {
    const out = await run(update(), { description: "new", skills: [], soul: "New soul", model: "null", tool_groups: "none" }, { agent_name: "helper" });
    expect(content(out)).toBe("Agent 'helper' updated successfully. Changed: description, skills, soul. The changes apply from the next message.");
    expect(doc("helper")).toEqual({ name: "helper", description: "new", skills: [], model: "m1" });
    expect(soul("helper")).toBe("New soul");
  });

  it("reports no changes for equal values", async () => {
    expect(content(await run(update(), { description: "old", model: "m1" }, { agent_name: "helper" }))).toContain("No changes applied");
  });

  it("checks in order: webhook channel, no fields, blank soul, list type, agent name, model, skills, existence", async () => {
    const err = async (args: Record<string, unknown>, ctx: Record<string, unknown>, expected: string) => {
      const out = (await run(update(), args, ctx)) as ToolMessage;
      expect(out.status).toBe("error");
      expect(String(out.content)).toContain(expected);
    };
    await err({ description: "x" }, { agent_name: "helper", channel_name: "github" }, "operator-trusted");
    await err({ description: "undefined" }, { agent_name: "helper" }, "No fields provided");
    await err({ soul: " " }, { agent_name: "helper" }, "Omit the soul field");
    await err({ skills: "data-analysis" }, { agent_name: "helper" }, "must be a JSON array");
    await err({ description: "x" }, {}, "only available inside a custom agent's chat");
    await err({ description: "x" }, { agent_name: "bad_name" }, "Invalid agent name");
    await err({ model: "gpt-9" }, { agent_name: "helper" }, "Unknown model 'gpt-9'");
    await err({ skills: ["nope"] }, { agent_name: "helper" }, "Unknown skill 'nope'");
    await err({ description: "x" }, { agent_name: "ghost" }, "does not exist for the current user");
    expect(doc("helper").description).toBe("old");
  });

  it("keeps users apart", async () => {
    expect(content(await run(update(), { description: "x" }, { agent_name: "helper", user_id: "someone-else" }))).toContain("does not exist");
  });
});

describe("agent tools when agents_api is disabled", () => {
  it("refuse to write agent files or the default SOUL.md", async () => {
    const closed = parseAppConfig({ models: [{ name: "m1", use: "langchain_openai:ChatOpenAI", model: "x" }] });
    const store = new AgentStore(mkdtempSync(path.join(tmpdir(), "dfgw-closed-")));
    const update = createUpdateAgentTool({ store, appConfig: closed, knownSkills: [] }) as unknown as Tool;
    const res = (await update.invoke({ soul: "new soul" }, { context: { agent_name: "x", app_config: closed }, toolCall: { id: "c1" } } as never)) as { content: string };
    expect(res.content).toBe(AGENT_WRITES_DISABLED);
    expect(agentWritesDisabled({ context: { app_config: closed } })).toBe(true);
    expect(agentWritesDisabled({ context: { app_config: appConfig } })).toBe(false);
    expect(agentWritesDisabled({ context: {} })).toBe(false);
  });
});
