// Port of the task part of DeerFlow mcp/tools.py: a server's `task_toolsets` turn its submit tool into a
// background-task submitter (the model gets a local task id) and hide its status and cancel tools, which the
// gateway's poller and the web app's background-tasks panel use instead.
import { DynamicStructuredTool } from "@langchain/core/tools";
import { runContextOf, type RuntimeLike } from "../../agents/run-context.js";
import type { ExtensionsConfig } from "../../config/extensions-config.js";
import { getLogger } from "../../logger.js";
import type { AgentTool } from "../../tools/get-available-tools.js";
import type { McpTaskService } from "./task-service.js";

let installed: McpTaskService | null = null;
const warned = new Set<string>();

/** Installs (or, with null, removes) the process's task service: agent builds wrap task toolsets only while one is installed. */
export function installMcpTaskService(service: McpTaskService | null): void {
  installed = service;
}

/** The installed task service, or null (`mcp_tasks.enabled` is off). */
export function installedMcpTaskService(): McpTaskService | null {
  return installed;
}

type McpToolLike = { name: string; description: string; schema: unknown; metadata?: Record<string, unknown> };

/**
 * The tools with every configured task toolset applied: the submit tool replaced by one that submits through the
 * task service and answers the local task id; the status and cancel tools removed. Without an installed service the
 * tools are left as ordinary MCP tools, with a warning naming the server (once per server).
 */
export function applyMcpTaskToolsets(tools: AgentTool[], extensions: ExtensionsConfig, service = installed): AgentTool[] {
  const withToolsets = Object.entries(extensions.mcpServers).filter(([, s]) => s.enabled && s.task_toolsets.length);
  if (!withToolsets.length) return tools;
  if (!service) {
    for (const [name] of withToolsets) {
      if (!warned.has(name)) getLogger().warn({ server: name }, `MCP server '${name}' has task_toolsets but mcp_tasks.enabled is off: its task tools are ordinary tools`);
      warned.add(name);
    }
    return tools;
  }
  const servers = new Map(withToolsets);
  const out: AgentTool[] = [];
  for (const t of tools) {
    const md = (t as unknown as McpToolLike).metadata ?? {};
    const server = typeof md.mcp_server === "string" ? md.mcp_server : null;
    const toolsets = server ? (servers.get(server)?.task_toolsets ?? []) : [];
    if (toolsets.some((ts) => ts.status_tool === md.mcp_tool || ts.cancel_tool === md.mcp_tool)) continue;
    const toolset = toolsets.find((ts) => ts.submit_tool === md.mcp_tool);
    out.push(toolset && server ? submitTool(t as unknown as McpToolLike, server, toolset, service) : t);
  }
  return out;
}

function submitTool(t: McpToolLike, server: string, toolset: Parameters<McpTaskService["submit"]>[0]["toolset"], service: McpTaskService): AgentTool {
  return new DynamicStructuredTool({
    name: t.name,
    description: `${t.description}\n\nRuns in the background: this returns a task id at once; the user follows the task (and can cancel it) in the thread's background tasks.`,
    schema: t.schema as never,
    metadata: t.metadata,
    func: async (args: Record<string, unknown>, _run, config) => {
      const { userId, threadId, agentName } = runContextOf(config as RuntimeLike);
      if (!threadId) throw new Error("background MCP tasks need a thread");
      const task = await service.submit({ userId, threadId, server, toolset, args, assistantId: agentName ?? null });
      return `Background task '${toolset.name}' submitted (task_id: ${task.id}). It runs on; the user sees its status in the background tasks panel.`;
    },
  }) as unknown as AgentTool;
}
