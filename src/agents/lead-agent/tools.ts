// Port of DeerFlow agents/lead_agent/agent.py tool assembly (agent.py:803-918): branch tools, deferral, late tools.
import type { StructuredToolInterface } from "@langchain/core/tools";
import { getAgentsDir, getSkillsRoot } from "../../config/paths.js";
import { AgentStore } from "../../config/agent-store.js";
import type { ExtensionsConfig } from "../../config/extensions-config.js";
import { buildMcpRoutingIndex, type McpRoutingIndex } from "../../tools/mcp-routing.js";
import type { AppConfig } from "../../config/schema.js";
import { getLogger } from "../../logger.js";
import type { Skill } from "../../skills/parse-skill.js";
import { createDescribeSkillTool } from "../../tools/builtins/describe-skill.js";
import { createMemoryTools } from "../../tools/builtins/memory-tools.js";
import { createSetupAgentTool } from "../../tools/builtins/setup-agent.js";
import { createSkillManageTool } from "../../tools/builtins/skill-manage.js";
import type { SubagentRuntime } from "../../tools/builtins/task.js";
import { buildDeferredCatalog, createToolSearchTool, type DeferredCatalog } from "../../tools/builtins/tool-search.js";
import { createUpdateAgentTool, WEBHOOK_CHANNELS } from "../../tools/builtins/update-agent.js";
import { getAvailableTools, type AgentTool } from "../../tools/get-available-tools.js";
import { isMcpTool } from "../../tools/mcp-tools.js";
import { applyMcpTaskToolsets } from "../../runtime/mcp-tasks/task-tools.js";

/** Inputs of {@link assembleLeadTools}. */
export interface LeadToolsOptions {
  appConfig: AppConfig;
  /** Which branch is built. */
  branch: "bootstrap" | "custom" | "default" | "subagent";
  /** Validated agent name (custom agent; also set in bootstrap, where it names the agent to create). */
  agentName: string | null;
  /** Tool groups to keep (null = all); ignored in bootstrap. */
  groups: string[] | null;
  modelName: string;
  subagentEnabled: boolean;
  subagentRuntime?: SubagentRuntime;
  /** `non_interactive`: drop `ask_clarification`. */
  nonInteractive: boolean;
  /** `channel_name` of the run (`github` drops `update_agent`). */
  channelName: string | null;
  extensions: ExtensionsConfig;
  /** Every discovered skill (validation of `skills` arguments). */
  skills: readonly Skill[];
  /** Skills the agent may use (describe_skill serves these). */
  usableSkills: readonly Skill[];
  /** `skills.deferred_discovery` applies to this build. */
  deferredDiscovery: boolean;
  /** Agent store for setup_agent / update_agent (default: the store under `DEER_FLOW_AGENTS_DIR`). */
  store?: AgentStore;
}

/** The assembled tools and the deferred catalog (null when nothing is deferred). */
export interface LeadTools {
  tools: AgentTool[];
  deferred: DeferredCatalog | null;
  /** MCP routing hints of the MCP tools (extensions_config.json `routing`), by tool name; empty when none. */
  routing: McpRoutingIndex;
}

/**
 * The lead agent's tools, in DeerFlow's order: `getAvailableTools` (config tools, built-ins, `task`,
 * `view_image`, MCP), then `setup_agent` (bootstrap) or `update_agent` (custom agent, not on a webhook channel),
 * then [`skill_manage` when `skill_evolution.enabled`], [`tool_search` over the MCP tools when
 * `tool_search.enabled`], [`describe_skill` with deferred skill discovery and at least one usable skill], [memory
 * tools in memory tool mode]. `ask_clarification` is dropped for non-interactive runs and subagents. Skill
 * allowlists never remove ordinary tools.
 * @throws Error "tool_search is enabled ... no deferred catalog" if MCP tools exist but none could be deferred
 *   (fail closed, DeerFlow `tool_search.py:200-218`).
 */
export async function assembleLeadTools(o: LeadToolsOptions): Promise<LeadTools> {
  const { appConfig, branch } = o;
  let tools = await getAvailableTools({
    appConfig,
    groups: branch === "bootstrap" ? null : o.groups,
    modelName: o.modelName,
    subagentEnabled: o.subagentEnabled,
    // Subagents keep their own view of the thread's files (DeerFlow task_tool `include_upload_tool: False`).
    includeUploadTool: branch !== "subagent",
    subagentRuntime: o.subagentRuntime,
    extensions: o.extensions,
  });
  // Task toolsets (mcp_tasks): the submit tool submits a background task; status and cancel are the poller's.
  tools = applyMcpTaskToolsets(tools, o.extensions);
  const knownSkills = o.skills.map((s) => s.name);
  const store = () => o.store ?? new AgentStore(getAgentsDir());
  if (branch === "bootstrap") {
    tools.push(createSetupAgentTool({ store: store(), agentsDir: getAgentsDir(), knownSkills }) as unknown as AgentTool);
  } else if (branch === "custom" && o.agentName && !(o.channelName && WEBHOOK_CHANNELS.has(o.channelName))) {
    tools.push(createUpdateAgentTool({ store: store(), appConfig, knownSkills }) as unknown as AgentTool);
  }
  // DeerFlow appends skill_manage to the built-ins of every build when the switch is on.
  if (appConfig.skill_evolution.enabled) tools.push(createSkillManageTool({ skillsRoot: getSkillsRoot(appConfig.skills) }) as unknown as AgentTool);
  if (o.nonInteractive || branch === "subagent") tools = tools.filter((t) => t.name !== "ask_clarification");
  let deferred: DeferredCatalog | null = null;
  if (appConfig.tool_search.enabled) {
    const mcp = tools.filter(isMcpTool) as unknown as StructuredToolInterface[];
    if (mcp.length) {
      deferred = buildDeferredCatalog(mcp);
      if (!deferred.names.size) throw new Error("tool_search is enabled and MCP tools exist, but no deferred catalog could be built");
      tools.push(createToolSearchTool(deferred, appConfig.tool_search.auto_promote_top_k) as unknown as AgentTool);
    }
  }
  if (o.deferredDiscovery && o.usableSkills.length) tools.push(createDescribeSkillTool(o.usableSkills, appConfig.skills.container_path) as unknown as AgentTool);
  if (appConfig.memory.enabled && appConfig.memory.mode === "tool" && branch !== "subagent") {
    const names = new Set(tools.map((t) => t.name));
    for (const t of createMemoryTools({ agentName: o.agentName ?? "default" })) {
      if (names.has(t.name)) getLogger().warn(`Memory tool name '${t.name}' already exists and was skipped.`);
      else tools.push(t as unknown as AgentTool);
    }
  }
  // Routing is off by default: the index is empty and nothing is added to the prompt or the chain.
  const routing = buildMcpRoutingIndex(tools.filter(isMcpTool) as unknown as { name: string; metadata?: Record<string, unknown> }[], o.extensions);
  return { tools, deferred, routing };
}
