// Start-up of the MCP background-task runtime (`mcp_tasks.enabled`): its store, the poller, the installed service.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { AppConfig } from "../../config/schema.js";
import { sharedMcpToolCache } from "../../tools/mcp-tools.js";
import { readExtensionsForBuild } from "../../tools/read-extensions.js";
import { mcpTasksConfig } from "./task-config.js";
import { McpTaskService, type McpTaskCaller, type RawToolResult } from "./task-service.js";
import { McpTaskStore } from "./task-store.js";
import { installMcpTaskService } from "./task-tools.js";

/** The running task runtime of one app. */
export interface McpTasksRuntime {
  service: McpTaskService;
  close(): Promise<void>;
}

/**
 * Calls a raw tool through the shared MCP connections (OAuth included); a server not connected yet (a restart with
 * tasks to poll before any agent build) is connected from the current extensions config first.
 */
export const sharedMcpCaller: McpTaskCaller = async (server, tool, args) => {
  let client = await sharedMcpToolCache.sdkClient(server);
  if (!client) {
    await sharedMcpToolCache.getTools(readExtensionsForBuild());
    client = await sharedMcpToolCache.sdkClient(server);
  }
  if (!client) throw new Error(`MCP server '${server}' is unavailable`);
  const timeout = readExtensionsForBuild().mcpServers[server]?.tool_call_timeout;
  return (await client.callTool({ name: tool, arguments: args }, undefined, timeout ? { timeout: timeout * 1000 } : undefined)) as RawToolResult;
};

/**
 * Opens the task runtime when `mcp_tasks.enabled` (else null): the task table in `<home>/data/mcp-tasks.sqlite`,
 * the poller started, the service installed for agent builds.
 * @param shared the thread database is shared with other processes (PostgreSQL).
 * @throws Error for an invalid section, or `enabled` with a shared database (tasks are tracked per process here).
 */
export function openMcpTasks(appConfig: AppConfig, home: string, shared: boolean, getAppConfig: () => AppConfig, caller: McpTaskCaller = sharedMcpCaller): McpTasksRuntime | null {
  if (!mcpTasksConfig(appConfig).enabled) return null;
  if (shared) throw new Error("mcp_tasks.enabled needs the local SQLite database: background MCP tasks are tracked per process, which deerflow-gateway does not offer on PostgreSQL (set mcp_tasks.enabled: false)");
  mkdirSync(path.join(home, "data"), { recursive: true });
  const store = new McpTaskStore(path.join(home, "data", "mcp-tasks.sqlite"));
  // A reload with a broken section keeps the start-up values.
  const startup = mcpTasksConfig(appConfig);
  const config = () => {
    try {
      return mcpTasksConfig(getAppConfig());
    } catch {
      return startup;
    }
  };
  const service = new McpTaskService(store, config, caller);
  service.start();
  installMcpTaskService(service);
  return {
    service,
    close: async () => {
      installMcpTaskService(null);
      await service.stop();
      store.close();
    },
  };
}
