// Port of DeerFlow tools/tools.py (get_available_tools), for config tools and the built-ins this release has.
import { getProjectRoot } from "../config/paths.js";
import type { AppConfig } from "../config/schema.js";
import { getLogger } from "../logger.js";
import { resolveUse } from "../models/resolve-use.js";
import { createAskClarificationTool } from "./builtins/ask-clarification.js";

/** A LangChain tool as the agent needs it. */
export interface AgentTool {
  name: string;
  invoke: (...args: never[]) => unknown;
}

/** Options of {@link getAvailableTools}. */
export interface GetAvailableToolsOptions {
  appConfig: AppConfig;
  /** Tool groups to keep (`null` = all groups, `[]` = no config tools). Built-ins are never filtered. */
  groups?: string[] | null;
}

const reported = new Set<string>();

function isTool(value: unknown): value is AgentTool {
  return typeof value === "object" && value !== null && typeof (value as AgentTool).name === "string" && typeof (value as AgentTool).invoke === "function";
}

/**
 * The agent's tools: configured tools (each `use:` resolved as `module:export` of a ready LangChain tool,
 * filtered by `groups`), then the built-ins (`ask_clarification`). De-duplicated by name, first wins, each
 * dropped duplicate logged as "Duplicate tool name". A configured tool whose `use:` cannot be resolved (e.g. a
 * DeerFlow Python path with no TypeScript counterpart) is left out and reported once per path, so one broken
 * entry does not fail every run.
 */
export async function getAvailableTools(options: GetAvailableToolsOptions): Promise<AgentTool[]> {
  const { appConfig, groups = null } = options;
  const log = getLogger();
  const selected = appConfig.tools.filter((t) => groups === null || groups.includes(t.group));
  const configTools = await Promise.all(
    selected.map(async (entry) => {
      try {
        const value = await resolveUse(entry.use, getProjectRoot());
        if (!isTool(value)) throw new Error(`${entry.use} is not a LangChain tool instance`);
        if (value.name !== entry.name) log.warn({ configured: entry.name, actual: value.name }, `tool '${entry.name}' is named '${value.name}' by its module; using '${value.name}'`);
        return value;
      } catch (err) {
        if (!reported.has(entry.use)) {
          reported.add(entry.use);
          log.warn({ tool: entry.name, use: entry.use, err: (err as Error).message }, `tool '${entry.name}' is unavailable: ${(err as Error).message}`);
        }
        return null;
      }
    }),
  );
  const all = [...configTools.filter((t): t is AgentTool => t !== null), createAskClarificationTool() as unknown as AgentTool];
  const seen = new Set<string>();
  const out: AgentTool[] = [];
  for (const t of all) {
    if (seen.has(t.name)) {
      log.warn({ tool: t.name }, `Duplicate tool name '${t.name}'; keeping the first`);
      continue;
    }
    seen.add(t.name);
    out.push(t);
  }
  return out;
}
