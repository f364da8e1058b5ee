// Port of DeerFlow's MCP routing hints (config/extensions_config.py resolve_effective_mcp_routing, tools/
// mcp_metadata.py, tools/builtins/tool_search.py build_mcp_routing_middleware and the <mcp_routing_hints> section).
import type { ExtensionsConfig } from "../config/extensions-config.js";
import { escapePromptText } from "../agents/prompt-text.js";
import { MCP_SERVER_METADATA_KEY } from "./mcp-tools.js";

/** The effective routing of one MCP tool with `mode: prefer` and at least one keyword. */
export interface McpRoute {
  priority: number;
  keywords: string[];
}

/** The routing of a build: per tool name, for the tools whose routing is on. */
export type McpRoutingIndex = ReadonlyMap<string, McpRoute>;

/**
 * The effective routing of `tool` (an MCP tool: `metadata.mcp_server`, `metadata.mcp_tool` = its name on the
 * server): the server's `routing`, with the keys the tool's override `tools.<original name>.routing` sets put over
 * it. Null for a non-MCP tool, `mode: off` (the default), or no non-blank keyword.
 */
export function mcpRouteOf(tool: { name: string; metadata?: Record<string, unknown> }, extensions: ExtensionsConfig): McpRoute | null {
  const server = tool.metadata?.[MCP_SERVER_METADATA_KEY];
  if (typeof server !== "string") return null;
  const cfg = extensions.mcpServers[server];
  if (!cfg) return null;
  const original = typeof tool.metadata?.mcp_tool === "string" ? tool.metadata.mcp_tool : tool.name;
  const effective = { mode: "off", priority: 0, keywords: [] as string[], ...(cfg.routing ?? {}), ...(cfg.tools[original]?.routing ?? {}) };
  if (effective.mode !== "prefer") return null;
  const keywords = effective.keywords.map((k) => k.trim()).filter(Boolean);
  return keywords.length ? { priority: effective.priority, keywords } : null;
}

/** The routes of `tools` (those with routing on), by tool name. */
export function buildMcpRoutingIndex(tools: readonly { name: string; metadata?: Record<string, unknown> }[], extensions: ExtensionsConfig): Map<string, McpRoute> {
  const index = new Map<string, McpRoute>();
  for (const t of tools) {
    const route = mcpRouteOf(t, extensions);
    if (route) index.set(t.name, route);
  }
  return index;
}

const keywordList = (k: string[]) => (k.length === 1 ? k[0] : `${k.slice(0, -1).join(", ")}, or ${k.at(-1)}`);

/**
 * The `<mcp_routing_hints>` prompt section (upstream's wording): per routed tool, highest priority first (then by
 * name), "When the user's request involves <keywords>:" and "prefer the `<tool>` tool." or, for a deferred tool,
 * "use `tool_search` to fetch `<tool>`, then prefer that MCP tool.". Names and keywords are escaped. "" when none.
 */
export function mcpRoutingHintsSection(index: McpRoutingIndex, deferred: ReadonlySet<string>): string {
  if (!index.size) return "";
  const entries = [...index].sort(([a, x], [b, y]) => y.priority - x.priority || (a < b ? -1 : a > b ? 1 : 0));
  const lines = ["<mcp_routing_hints>"];
  for (const [name, route] of entries) {
    lines.push(`When the user's request involves ${keywordList(route.keywords.map(escapePromptText))}:`);
    lines.push(deferred.has(name) ? `  use \`tool_search\` to fetch \`${escapePromptText(name)}\`, then prefer that MCP tool.` : `  prefer the \`${escapePromptText(name)}\` tool.`);
  }
  lines.push("</mcp_routing_hints>");
  return lines.join("\n");
}
