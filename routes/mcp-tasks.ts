// DeerFlow app/gateway/routers/mcp_tasks.py: the web app's background-tasks panel reads a thread's MCP background
// tasks and cancels one. Off (`mcp_tasks.enabled: false`): the list reads as empty, a task as not found.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { NotFoundError } from "../src/errors.js";
import type { McpTaskRecord } from "../src/runtime/mcp-tasks/task-store.js";
import { doc, validInput } from "./openapi.js";
import { ownedThread } from "./thread-access.js";

/** Upstream `_MAX_PUBLIC_ERROR_CHARS`. */
const MAX_PUBLIC_ERROR_CHARS = 500;
const ListQuery = z.looseObject({ limit: z.coerce.number().int().min(1).max(100).default(50) });
type Params = { Params: { thread_id: string; task_id: string } };

const shortError = (v: string | null | undefined) => (v == null ? null : v.slice(0, MAX_PUBLIC_ERROR_CHARS));

/** A task as the list shows it (upstream `_list_item`). */
export function listItem(r: McpTaskRecord, threshold: number) {
  return {
    task_id: r.id, task_name: r.task_name, status: r.status, created_at: r.created_at, updated_at: r.updated_at, error: shortError(r.error),
    tracking_degraded: r.consecutive_poll_error_count >= threshold, cancel_requested: r.cancel_requested_at !== null,
  };
}

/** A task with its details (upstream `_detail`). */
export function detail(r: McpTaskRecord, threshold: number) {
  return {
    ...listItem(r, threshold), last_polled_at: r.last_polled_at, last_poll_error: shortError(r.last_poll_error), last_cancel_error: shortError(r.last_cancel_error),
    cancel_attempt_count: r.cancel_attempt_count, notification_status: r.notification_status, notification_error: shortError(r.notification_error), notification_attempt_count: r.notification_attempt_count,
    result: r.result, result_preview: r.result_preview, result_truncated: r.result_truncated, result_artifact: r.result_artifact, input_required: r.input_required,
  };
}

/** Registers `/threads/:thread_id/mcp-tasks[/:task_id[/cancel]]` (under `/api`). */
export async function mcpTaskRoutes(app: FastifyInstance): Promise<void> {
  const service = () => app.deerflow.mcpTasks;
  app.get<Params>("/threads/:thread_id/mcp-tasks", { schema: doc("mcp-tasks", "A thread's MCP background tasks, newest first", { querystring: ListQuery }) }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const { limit } = validInput(ListQuery, request.query, "query");
    const s = service();
    if (!s) return [];
    return (await s.store.listByThread(request.params.thread_id, principalOf(request).id, limit)).map((r) => listItem(r, s.trackingDegradedAfterErrors));
  });
  app.get<Params>("/threads/:thread_id/mcp-tasks/:task_id", { schema: doc("mcp-tasks", "One MCP background task") }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const s = service();
    const task = s ? await s.store.get(request.params.task_id, principalOf(request).id) : null;
    if (!s || !task || task.thread_id !== request.params.thread_id) throw new NotFoundError("MCP task not found");
    return detail(task, s.trackingDegradedAfterErrors);
  });
  app.post<Params>("/threads/:thread_id/mcp-tasks/:task_id/cancel", { schema: doc("mcp-tasks", "Cancel an MCP background task") }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const s = service();
    const task = s ? await s.cancel(request.params.task_id, request.params.thread_id, principalOf(request).id) : null;
    if (!s || !task) throw new NotFoundError("MCP task not found");
    return detail(task, s.trackingDegradedAfterErrors);
  });
}
