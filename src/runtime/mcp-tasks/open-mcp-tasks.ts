// Start-up of the MCP background-task runtime (`mcp_tasks.enabled`): its store, the poller, the installed service.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { AppConfig } from "../../config/schema.js";
import { sharedMcpToolCache } from "../../tools/mcp-tools.js";
import { readExtensionsForBuild } from "../../tools/read-extensions.js";
import { databaseUrl } from "../persistence/persistence.js";
import type { RunRepository } from "../persistence/repositories.js";
import type { RunService } from "../runs/run-service.js";
import { SqliteMcpTaskStore } from "./sqlite-task-store.js";
import { mcpTasksConfig } from "./task-config.js";
import type { NotificationLauncher } from "./task-notifier.js";
import { McpTaskService, type McpTaskCaller, type RawToolResult } from "./task-service.js";
import type { McpTaskStore } from "./task-store.js";
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
 * The task table: PostgreSQL when `database.backend: postgres` (shared by every process, its own pool of 4), else
 * `<home>/data/mcp-tasks.sqlite`.
 * @throws Error "cannot open database.url for mcp_tasks: ..." when PostgreSQL cannot be reached.
 */
async function openStore(appConfig: AppConfig, home: string): Promise<McpTaskStore> {
  const url = databaseUrl(appConfig);
  if (!url) {
    mkdirSync(path.join(home, "data"), { recursive: true });
    return new SqliteMcpTaskStore(path.join(home, "data", "mcp-tasks.sqlite"));
  }
  const [{ default: pg }, { PgMcpTaskStore }] = await Promise.all([import("pg"), import("./pg-task-store.js")]);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that kills the process.
  pool.on("error", () => undefined);
  const store = new PgMcpTaskStore(pool);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw new Error(`cannot open database.url for mcp_tasks: ${(err as Error).message}`);
  }
  return store;
}

/**
 * Opens the task runtime when `mcp_tasks.enabled` (else null): the task table (see {@link openStore}), the poller
 * started, the service installed for agent builds. Task updates reach their threads once
 * {@link McpTaskService.setLauncher} is given a launcher ({@link runLauncher}).
 * @throws Error for an invalid section, or a PostgreSQL database that cannot be opened.
 */
export async function openMcpTasks(appConfig: AppConfig, home: string, getAppConfig: () => AppConfig, caller: McpTaskCaller = sharedMcpCaller): Promise<McpTasksRuntime | null> {
  if (!mcpTasksConfig(appConfig).enabled) return null;
  const store = await openStore(appConfig, home);
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
      await store.close();
    },
  };
}

/**
 * Delivery runs through the run service, as upstream's `launch_mcp_task_notification_run`: the prompt as one user
 * message hidden from the app (`hide_from_ui`), `metadata.mcp_task_notification`, `non_interactive`,
 * `on_disconnect: continue`, `multitask_strategy: reject` (a busy thread answers ConflictError, tried again later).
 */
export function runLauncher(runService: RunService, runs: RunRepository): NotificationLauncher {
  return {
    launch: async (o) => {
      const { run } = await runService.start(o.threadId, {
        assistant_id: o.assistantId,
        input: { messages: [{ role: "user", content: o.prompt, additional_kwargs: { hide_from_ui: true } }] },
        metadata: { mcp_task_notification: { task_id: o.taskId, dispatch_attempt: o.attempt } },
        context: { non_interactive: true },
        on_disconnect: "continue",
        multitask_strategy: "reject",
      } as Parameters<RunService["start"]>[1], o.userId);
      return { runId: run.record.run_id };
    },
    runStatus: async (runId) => {
      const record = await runs.get(runId);
      return record ? { status: record.status, error: record.error ?? null } : null;
    },
  };
}
