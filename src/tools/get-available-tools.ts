// Port of DeerFlow tools/tools.py (get_available_tools): config tools, built-ins, subagent and vision tools, MCP.
import { getProjectRoot } from "../config/paths.js";
import type { ExtensionsConfig } from "../config/extensions-config.js";
import { getModelConfig, type AppConfig } from "../config/schema.js";
import { getLogger } from "../logger.js";
import { resolveUse } from "../models/resolve-use.js";
import { isHostBashAllowed, isHostBashTool } from "../sandbox/security.js";
import { createAskClarificationTool } from "./builtins/ask-clarification.js";
import { createListUploadedFilesTool } from "./builtins/list-uploaded-files.js";
import { createPresentFilesTool } from "./builtins/present-files.js";
import { createTaskTool, type SubagentRuntime } from "./builtins/task.js";
import { createViewImageTool } from "./builtins/view-image.js";
import { sharedMcpToolCache, type McpToolCache } from "./mcp-tools.js";
import { readExtensionsForBuild } from "./read-extensions.js";

/** A LangChain tool as the agent needs it. */
export interface AgentTool {
  name: string;
  invoke: (...args: never[]) => unknown;
}

/** Options of {@link getAvailableTools}. */
export interface GetAvailableToolsOptions {
  appConfig: AppConfig;
  /** Tool groups to keep (`null` = all groups, `[]` = no config tools). Built-ins and MCP tools are never filtered. */
  groups?: string[] | null;
  /** Whether MCP tools of the enabled servers are included (default true). */
  includeMcp?: boolean;
  /** The resolved model: `view_image` is added when it `supports_vision` (null: the first configured model). */
  modelName?: string | null;
  /** Adds `list_uploaded_files` (default true; subagents pass false: they see no upload history). */
  includeUploadTool?: boolean;
  /** Adds the `task` tool. */
  subagentEnabled?: boolean;
  /** What runs `task` calls; without one `task` answers with an error naming the missing runtime. */
  subagentRuntime?: SubagentRuntime;
  /** The extensions config read for this build (default: read from disk now). */
  extensions?: ExtensionsConfig;
  /** MCP connection cache (default: the process-wide one). */
  mcpCache?: McpToolCache;
}

const reported = new Set<string>();

function isTool(value: unknown): value is AgentTool {
  return typeof value === "object" && value !== null && typeof (value as AgentTool).name === "string" && typeof (value as AgentTool).invoke === "function";
}

/** Removes later tools whose name an earlier one has, logging "Duplicate tool name" for each (first wins). */
export function dedupeTools<T extends { name: string }>(tools: readonly T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const t of tools) {
    if (seen.has(t.name)) {
      getLogger().warn({ tool: t.name }, `Duplicate tool name '${t.name}'; keeping the first`);
      continue;
    }
    seen.add(t.name);
    out.push(t);
  }
  return out;
}

/**
 * Resolves the configured tools (`use:` = `module:export` of a ready LangChain tool), filtered by `groups`, host
 * bash only with `sandbox.allow_host_bash`. An entry whose `use:` cannot be resolved (e.g. a DeerFlow Python path
 * with no TypeScript counterpart) is left out with a warning naming the tool, its `use:` and the reason, reported
 * once per path, so one broken entry does not fail every run.
 */
export async function loadConfigTools(appConfig: AppConfig, groups: string[] | null): Promise<AgentTool[]> {
  const log = getLogger();
  // Host bash is dropped unless sandbox.allow_host_bash (DeerFlow `_is_host_bash_tool`).
  const selected = appConfig.tools.filter((t) => (groups === null || groups.includes(t.group)) && (isHostBashAllowed(appConfig) || !isHostBashTool(t)));
  const tools = await Promise.all(
    selected.map(async (entry) => {
      try {
        const value = await resolveUse(entry.use, getProjectRoot());
        if (!isTool(value)) throw new Error(`${entry.use} is not a LangChain tool instance`);
        if (value.name !== entry.name) log.warn({ configured: entry.name, actual: value.name }, `tool '${entry.name}' is named '${value.name}' by its module; using '${value.name}'`);
        return value;
      } catch (err) {
        if (!reported.has(entry.use)) {
          reported.add(entry.use);
          log.warn({ tool: entry.name, use: entry.use, err: (err as Error).message }, `tool '${entry.name}' (use: '${entry.use}') is unavailable and was left out: ${(err as Error).message}`);
        }
        return null;
      }
    }),
  );
  return tools.filter((t): t is AgentTool => t !== null);
}

/**
 * The agent's tools, in DeerFlow's order: configured tools ({@link loadConfigTools}); the built-ins
 * `present_files`, `ask_clarification`, [`list_uploaded_files` unless `includeUploadTool` is false], [`task` when `subagentEnabled`], [`view_image` when the model
 * `supports_vision`]; then the MCP tools of the enabled servers in extensions_config.json (read for this build;
 * connections cached by content, a broken server logged and skipped). De-duplicated by name, first wins
 * (config beats built-in beats MCP). Mirrors DeerFlow `get_available_tools`.
 */
export async function getAvailableTools(options: GetAvailableToolsOptions): Promise<AgentTool[]> {
  const { appConfig, groups = null, includeMcp = true } = options;
  const configTools = await loadConfigTools(appConfig, groups);
  const builtins: AgentTool[] = [createPresentFilesTool() as unknown as AgentTool, createAskClarificationTool() as unknown as AgentTool];
  if (options.includeUploadTool ?? true) builtins.push(createListUploadedFilesTool() as unknown as AgentTool);
  if (options.subagentEnabled) builtins.push(createTaskTool(options.subagentRuntime) as unknown as AgentTool);
  const model = options.modelName ? getModelConfig(appConfig, options.modelName) : appConfig.models[0];
  if (model?.supports_vision) builtins.push(createViewImageTool() as unknown as AgentTool);
  let mcpTools: AgentTool[] = [];
  if (includeMcp) {
    const extensions = options.extensions ?? readExtensionsForBuild();
    if (Object.values(extensions.mcpServers).some((s) => s.enabled)) {
      mcpTools = (await (options.mcpCache ?? sharedMcpToolCache).getTools(extensions)) as unknown as AgentTool[];
    }
  }
  return dedupeTools([...configTools, ...builtins, ...mcpTools]);
}
