import { HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { clearBuildCache } from "../../../src/agents/lead-agent/build-cache.js";
import type { DeerflowAgent } from "../../../src/agents/factory.js";
import {
  _makeLeadAgent,
  makeLeadAgent,
  mergeRuntimeOptions,
  resolveModelName,
  resolveRuntimeOption,
  type LeadAgentConfig,
} from "../../../src/agents/lead-agent/agent.js";
import { resetAppConfig, setAppConfig } from "../../../src/config/app-config.js";
import { parseAppConfig, type AppConfig } from "../../../src/config/schema.js";
import { NotFoundError, ValidationError } from "../../../src/errors.js";
import { getLogger, setLogger } from "../../../src/logger.js";
import { recording } from "./recording-model.js";

const HELPER = path.join(path.dirname(fileURLToPath(import.meta.url)), "recording-model.ts");
const RECORD = `${HELPER}:RecordingModel`;
const thinkingModel = (name: string) => ({
  name, use: RECORD, model: `${name}-id`, supports_thinking: true, supports_reasoning_effort: true, when_thinking_enabled: { thinking_flag: "on" },
});
const appConfig: AppConfig = parseAppConfig({
  models: [{ name: "default-model", use: RECORD, model: "default-id" }, thinkingModel("context-model"), thinkingModel("agent-model"), thinkingModel("other-model")],
  tools: [
    { name: "bash", group: "cli", use: `${HELPER}:bashTool` },
    { name: "web_search", group: "web", use: `${HELPER}:webSearchTool` },
  ],
});

let agentsDir: string;
const savedEnv = { ...process.env };
const originalLogger = getLogger();
let warnings: string[];

function putAgent(name: string, config: string, soul?: string, user = "default") {
  const dir = path.join(agentsDir, user, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "config.yaml"), config);
  if (soul !== undefined) writeFileSync(path.join(dir, "SOUL.md"), soul);
}

const lastFields = () => recording().constructed.at(-1)!;
const build = (config: LeadAgentConfig) => _makeLeadAgent(config, { appConfig });
/** The tool names of a built lead agent: the compiled graph's ToolNode (no `tools` node when there are none). */
const toolNames = (agent: unknown) => ((agent as { nodes: { tools?: { bound: { tools: { name: string }[] } } } }).nodes.tools?.bound.tools ?? []).map((t) => t.name);

beforeAll(() => {
  agentsDir = mkdtempSync(path.join(tmpdir(), "lead-agents-"));
  process.env.DEER_FLOW_AGENTS_DIR = agentsDir;
  // Memory written by the runs below lands here, never in the repository's .deer-flow/.
  process.env.DEER_FLOW_HOME = path.join(agentsDir, "home");
  process.env.DEER_FLOW_SKILLS_DIR = path.join(agentsDir, "no-skills");
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = "";
  putAgent(
    "researcher",
    "model: agent-model\nmodel_settings:\n  temperature: 0.2\n  max_tokens: 12000\nthinking_enabled: false\nreasoning_effort: high\ntool_groups: [web]\nskills: [b, a]\n",
    "You are a meticulous researcher. Use <sources> & cite.",
  );
  putAgent("plain", "description: no overrides\n");
});
afterAll(() => {
  rmSync(agentsDir, { recursive: true, force: true });
  process.env = { ...savedEnv };
});
beforeEach(() => {
  // These tests look at what one build constructs; an earlier test's identical build would be reused.
  clearBuildCache();
  recording().constructed.length = 0;
  recording().calls.length = 0;
  warnings = [];
  setLogger(pino({ level: "warn" }, { write: (s: string) => void warnings.push(JSON.parse(s).msg) }));
});
afterEach(() => {
  setLogger(originalLogger);
  resetAppConfig();
});

describe("mergeRuntimeOptions / resolveRuntimeOption (agent-factory.md §2.1, §2.5)", () => {
  it("overlays context on configurable, context winning, and drops app_config", () => {
    expect(mergeRuntimeOptions({ configurable: { model_name: "A", x: 1, app_config: {} }, context: { model_name: "B", app_config: {} } })).toEqual({ model_name: "B", x: 1 });
  });

  it("judges request > agent > default by key presence, so a falsy request value still wins (CF-044)", () => {
    expect(resolveRuntimeOption({ thinking_enabled: false }, "thinking_enabled", true, true)).toBe(false);
    expect(resolveRuntimeOption({ thinking_enabled: null }, "thinking_enabled", true, true)).toBeNull();
    expect(resolveRuntimeOption({}, "thinking_enabled", false, true)).toBe(false);
    expect(resolveRuntimeOption({}, "thinking_enabled", null, true)).toBe(true);
  });
});

describe("resolveModelName (AF-024)", () => {
  it("falls back to the first model with a warning for an unknown name", () => {
    expect(resolveModelName("missing-model", appConfig)).toBe("default-model");
    expect(warnings.some((w) => w.includes("fallback to default model 'default-model'"))).toBe(true);
  });

  it("uses the first model silently when nothing is requested, and a configured name as is", () => {
    expect(resolveModelName(null, appConfig)).toBe("default-model");
    expect(resolveModelName("other-model", appConfig)).toBe("other-model");
    expect(warnings).toEqual([]);
  });

  it("fails when no models are configured, even for a requested name", () => {
    expect(() => resolveModelName("missing-model", parseAppConfig({}))).toThrow(NotFoundError);
    expect(() => resolveModelName("missing-model", parseAppConfig({}))).toThrow("No chat models are configured");
  });
});

describe("_makeLeadAgent: model options (AF-023, AF-025, AF-027, CF-043, CF-044)", () => {
  it("reads runtime options from context: model, thinking off and reasoning effort", async () => {
    await build({ context: { model_name: "context-model", thinking_enabled: false, reasoning_effort: "high" } });
    expect(lastFields()).toEqual({ model: "context-model-id", reasoningEffort: "high", maxRetries: 0 });
  });

  it("lets context beat configurable for the model name", async () => {
    await build({ configurable: { model_name: "other-model" }, context: { model_name: "context-model" } });
    expect(lastFields().model).toBe("context-model-id");
  });

  it("defaults thinking to on for a model that supports it", async () => {
    await build({ context: { model_name: "context-model" } });
    expect(lastFields()).toEqual({ model: "context-model-id", thinkingFlag: "on", maxRetries: 0 });
  });

  it("turns thinking off with a warning when the model does not support it", async () => {
    const config: LeadAgentConfig = { configurable: { model_name: "default-model", thinking_enabled: true } };
    const agent = await build(config);
    expect(lastFields()).toEqual({ model: "default-id", maxRetries: 0 });
    expect(agent.resolved.metadata.thinking_enabled).toBe(false);
    expect(warnings.some((w) => w.includes("Thinking mode is enabled but model 'default-model' does not support it"))).toBe(true);
  });

  it("falls back to the first model for an unknown requested model and records the model actually used", async () => {
    const config: LeadAgentConfig = { context: { model_name: "ghost" } };
    const agent = await build(config);
    expect(lastFields().model).toBe("default-id");
    expect(agent.resolved.metadata.model_name).toBe("default-model");
  });

  it("applies a custom agent's model, settings, thinking and effort defaults", async () => {
    await build({ context: { agent_name: "researcher" } });
    expect(lastFields()).toEqual({ model: "agent-model-id", temperature: 0.2, maxTokens: 12000, reasoningEffort: "high", maxRetries: 0 });
  });

  it("lets the request override the custom agent's thinking default", async () => {
    await build({ context: { agent_name: "researcher", thinking_enabled: true } });
    expect(lastFields()).toMatchObject({ model: "agent-model-id", thinkingFlag: "on", temperature: 0.2 });
  });

  it("lets a requested model beat the custom agent's model", async () => {
    await build({ context: { agent_name: "researcher", model_name: "other-model" } });
    expect(lastFields().model).toBe("other-model-id");
  });

  it("passes no overrides for an agent without model_settings", async () => {
    await build({ context: { agent_name: "plain", model_name: "default-model" } });
    expect(lastFields()).toEqual({ model: "default-id", maxRetries: 0 });
  });
});

describe("_makeLeadAgent: validation and branches", () => {
  it("rejects a path-traversal agent name, also on a bootstrap run (AF-029)", async () => {
    await expect(build({ context: { agent_name: "../../../tmp/evil" } })).rejects.toThrow(ValidationError);
    await expect(build({ configurable: { is_bootstrap: true, agent_name: "../../../tmp/evil" } })).rejects.toThrow("Invalid agent name");
    expect(recording().constructed).toHaveLength(0);
  });

  it("fails with not found for an unknown custom agent", async () => {
    await expect(build({ context: { agent_name: "ghost-agent" } })).rejects.toThrow(NotFoundError);
    await expect(build({ context: { agent_name: "ghost-agent" } })).rejects.toThrow("not found");
  });

  it("fails clearly when no models are configured", async () => {
    await expect(_makeLeadAgent({}, { appConfig: parseAppConfig({}) })).rejects.toThrow("No chat models are configured");
  });
});

describe("_makeLeadAgent: tools", () => {
  it("gives the default agent every configured tool plus the built-ins", async () => {
    expect(toolNames(await build({}))).toEqual(["bash", "web_search", "present_files", "ask_clarification", "list_uploaded_files"]);
  });

  it("filters configured tools by the custom agent's tool_groups and adds update_agent", async () => {
    expect(toolNames(await build({ context: { agent_name: "researcher" } }))).toEqual(["web_search", "present_files", "ask_clarification", "list_uploaded_files", "update_agent"]);
  });

  it("drops ask_clarification for non-interactive runs (AF-028)", async () => {
    expect(toolNames(await build({ context: { non_interactive: true } }))).toEqual(["bash", "web_search", "present_files", "list_uploaded_files"]);
  });
});

describe("_makeLeadAgent: metadata (AF-040)", () => {
  it("returns the custom agent's run metadata in agent.resolved", async () => {
    const config: LeadAgentConfig = { context: { agent_name: "Researcher" } };
    const agent = await build(config);
    expect(agent.resolved.metadata).toEqual({
      agent_name: "researcher",
      model_name: "agent-model",
      thinking_enabled: false,
      reasoning_effort: "high",
      is_plan_mode: false,
      subagent_enabled: false,
      tool_groups: ["web"],
      available_skills: ["a", "b"],
    });
  });

  it("returns the default agent's metadata and leaves the input config untouched", async () => {
    const config: LeadAgentConfig = { metadata: { keep: 1 } };
    const agent = await build(config);
    expect(agent.resolved.metadata).toMatchObject({ agent_name: "default", model_name: "default-model", tool_groups: null, available_skills: null });
    expect(config).toEqual({ metadata: { keep: 1 } });
  });
});

describe("the built lead agent runs", () => {
  const invoke = async (agent: { invoke: DeerflowAgent["invoke"] }, text: string) =>
    (await agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: "lead-1" } } as never)) as unknown as { messages: BaseMessage[] };

  it("sends the custom agent's escaped SOUL.md in the system prompt", async () => {
    const out = await invoke(await build({ context: { agent_name: "researcher" } }), "hi");
    expect(out.messages.at(-1)?.content).toBe("ok");
    const system = recording().calls[0][0];
    expect(SystemMessage.isInstance(system)).toBe(true);
    expect(system.text).toContain("<soul>\nYou are a meticulous researcher. Use &lt;sources&gt; &amp; cite.\n</soul>");
    expect(system.text).toContain('You are the custom agent "researcher"');
  });

  it("uses the default soul and no self-update section for the default agent", async () => {
    writeFileSync(path.join(agentsDir, "SOUL.md"), "Global soul text");
    try {
      await invoke(await build({}), "hi");
      const system = recording().calls[0][0].text;
      expect(system).toContain("<soul>\nGlobal soul text\n</soul>");
      expect(system).not.toContain("<self_update>\n");
      expect(system).toContain("You are DeerFlow 2.0");
    } finally {
      rmSync(path.join(agentsDir, "SOUL.md"));
    }
  });
});

describe("makeLeadAgent (agent-factory.md §3, AF-022)", () => {
  it("takes exactly one parameter", () => {
    expect(makeLeadAgent.length).toBe(1);
  });

  it("uses a real AppConfig from the context without reading the global config", async () => {
    process.env.DEER_FLOW_CONFIG_PATH = path.join(agentsDir, "no-such-config.yaml");
    await makeLeadAgent({ context: { model_name: "context-model", app_config: appConfig } });
    expect(lastFields().model).toBe("context-model-id");
    await makeLeadAgent({ configurable: { model_name: "other-model", app_config: appConfig } });
    expect(lastFields().model).toBe("other-model-id");
  });

  it("ignores a non-AppConfig app_config value and uses the global config", async () => {
    setAppConfig(parseAppConfig({ models: [{ name: "global-model", use: RECORD, model: "global-id" }] }));
    await makeLeadAgent({ context: { app_config: { models: [] } } });
    expect(lastFields().model).toBe("global-id");
  });
});
