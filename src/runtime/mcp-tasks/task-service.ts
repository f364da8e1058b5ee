// Port of DeerFlow app/mcp_tasks/service.py and mcp/tasks/ordinary.py: long-running MCP jobs behind an ordinary
// submit/status/cancel tool contract. The submit tool returns a remote handle; the service stores it, polls the
// status tool outside any agent run, and cancels through the cancel tool. Tools answer in `structuredContent`.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { z } from "zod";
import { getLogger } from "../../logger.js";
import type { McpTasksConfig } from "./task-config.js";
import { TaskNotifier, type NotificationLauncher } from "./task-notifier.js";
import { POLLABLE, type McpTaskRecord, type McpTaskStatus, type McpTaskStore } from "./task-store.js";

/** A raw MCP `tools/call` result (the fields the contract reads). */
export interface RawToolResult {
  isError?: boolean;
  content?: unknown;
  structuredContent?: unknown;
}
/** Calls one raw tool of one MCP server. @throws Error when the server is unavailable or the call fails. */
export type McpTaskCaller = (server: string, tool: string, args: Record<string, unknown>) => Promise<RawToolResult>;

/** One toolset of a server (`task_toolsets[]` in extensions_config.json). */
export interface TaskToolset {
  name: string;
  submit_tool: string;
  status_tool: string;
  cancel_tool: string;
}

/** A remote answer that breaks the contract: the task fails for good (upstream `McpTaskProtocolError`). */
export class McpTaskProtocolError extends Error {}

const MAX_ERROR_CHARS = 4000;
const MAX_HINT_S = 24 * 3600;
const Artifact = z.looseObject({ uri: z.string().min(1), mime_type: z.string().min(1) });
const SubmitPayload = z.looseObject({ task_id: z.string().min(1).max(255), status: z.literal("running") });
const StatusPayload = z.looseObject({
  task_id: z.string().min(1).max(255),
  status: z.enum(["running", "input_required", "completed", "failed", "cancelled"]),
  result: z.unknown().optional(),
  result_artifact: Artifact.nullish(),
  error: z.string().nullish(),
  error_code: z.string().nullish(),
  input_required: z.record(z.string(), z.unknown()).nullish(),
  poll_after_seconds: z.number().positive().finite().nullish(),
});
type Status = z.infer<typeof StatusPayload>;
const REMOTE_TO_LOCAL: Record<Status["status"], McpTaskStatus> = { running: "working", input_required: "input_required", completed: "completed", failed: "failed", cancelled: "cancelled" };

function firstText(result: RawToolResult): string | null {
  const blocks = Array.isArray(result.content) ? (result.content as { type?: string; text?: unknown }[]) : [];
  const text = blocks.find((b) => b?.type === "text" && typeof b.text === "string" && b.text.trim())?.text as string | undefined;
  return text ? text.trim().slice(0, 500) : null;
}

/** The tool's `structuredContent` parsed with `schema`. @throws Error (retryable) for `isError`; McpTaskProtocolError for a bad payload. */
export function parseStructured<T>(schema: z.ZodType<T>, result: RawToolResult, tool: string): T {
  if (result.isError) throw new Error(`MCP task tool '${tool}' returned an error${firstText(result) ? `: ${firstText(result)}` : ""}`);
  if (result.structuredContent == null) throw new McpTaskProtocolError(`MCP task tool '${tool}' must return structuredContent; text content is not parsed`);
  const parsed = schema.safeParse(result.structuredContent);
  if (!parsed.success) throw new McpTaskProtocolError(`Invalid structuredContent from MCP task tool '${tool}': ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

const clip = (s: string | null | undefined) => (s == null ? null : s.slice(0, MAX_ERROR_CHARS));

/**
 * Submits, polls and cancels MCP background tasks, and delivers their updates into the thread. `start()` runs a
 * scan every `poll_interval_seconds`: up to `max_concurrent_polls` due tasks are claimed (a lease of
 * `lease_seconds`, so processes sharing the PostgreSQL table never poll one task twice) and get a status call; a
 * failed call backs off exponentially (capped at `max_poll_backoff_seconds`, without an attempt limit), a contract
 * violation fails the task for good; `input_required` is polled every `input_required_poll_interval_seconds` at
 * least. A task that changes to a state needing attention (input required, completed, failed, cancelled) gets
 * `notification_status: pending`, and the same scan delivers it as a run on the thread (task-notifier.ts).
 */
export class McpTaskService {
  private timer: NodeJS.Timeout | null = null;
  private scanning: Promise<void> | null = null;
  /** This process's lease owner name (upstream: host and a random id). */
  private readonly owner = `${hostname()}:${randomUUID()}`;
  private notifier: TaskNotifier | null = null;

  /** @param store the task table (the routes read it). */
  constructor(
    readonly store: McpTaskStore,
    private readonly config: () => McpTasksConfig,
    private readonly call: McpTaskCaller,
    private readonly now: () => number = Date.now,
  ) {}

  /** Turns on delivery of task updates into their threads through `launcher` (the app sets it once runs can start). */
  setLauncher(launcher: NotificationLauncher): void {
    this.notifier = new TaskNotifier(this.store, this.config, launcher, this.owner, this.now);
  }

  /** Consecutive failed status calls after which a task reads as `tracking_degraded`. */
  get trackingDegradedAfterErrors(): number {
    return this.config().tracking_degraded_after_errors;
  }

  /** Calls the submit tool and stores the remote handle. @throws Error (the tool's failure, or a bad answer). */
  async submit(o: { userId: string; threadId: string; server: string; toolset: TaskToolset; args: Record<string, unknown>; assistantId?: string | null }): Promise<McpTaskRecord> {
    const result = await this.call(o.server, o.toolset.submit_tool, o.args);
    const payload = parseStructured(SubmitPayload, result, o.toolset.submit_tool);
    const at = new Date(this.now()).toISOString();
    const record: McpTaskRecord = {
      id: randomUUID(), user_id: o.userId, thread_id: o.threadId, server_name: o.server, task_name: o.toolset.name, remote_task_id: payload.task_id,
      driver_data: { submit_tool: o.toolset.submit_tool, status_tool: o.toolset.status_tool, cancel_tool: o.toolset.cancel_tool },
      status: "submitted", result: null, result_preview: null, result_truncated: false, result_artifact: null, input_required: null, error: null,
      last_poll_error: null, last_cancel_error: null, consecutive_poll_error_count: 0, cancel_attempt_count: 0, cancel_requested_at: null,
      last_polled_at: null, next_poll_at: this.now() + this.config().poll_interval_seconds * 1000, notification_status: null, notification_run_id: null,
      notification_attempt_count: 0, notification_error: null, next_notification_at: null, assistant_id: o.assistantId ?? null, created_at: at, updated_at: at,
    };
    await this.store.insert(record);
    return record;
  }

  /** The task's fields after a status (or cancel) answer: state, bounded result, next poll. */
  private applied(payload: Status, task: McpTaskRecord): Partial<McpTaskRecord> {
    const cfg = this.config();
    if (payload.task_id !== task.remote_task_id) throw new McpTaskProtocolError(`MCP task response task_id does not match the stored remote task: expected '${task.remote_task_id}', got '${payload.task_id}'`);
    if (payload.error_code === "task_not_found") return { status: "failed", error: clip(payload.error ?? "Remote MCP task was not found"), next_poll_at: null, ...this.attention(task, "failed") };
    if (payload.status === "input_required" && !payload.input_required) throw new McpTaskProtocolError("Invalid structuredContent: input_required status requires input_required");
    const status = REMOTE_TO_LOCAL[payload.status];
    const json = payload.result === undefined ? null : JSON.stringify(payload.result);
    const oversized = json !== null && Buffer.byteLength(json) > cfg.max_result_bytes;
    let wait = Math.min(payload.poll_after_seconds ?? cfg.poll_interval_seconds, MAX_HINT_S);
    if (status === "input_required") wait = Math.max(wait, cfg.input_required_poll_interval_seconds);
    return {
      status,
      result: oversized ? null : (payload.result ?? null),
      result_preview: oversized ? json!.slice(0, cfg.result_preview_max_chars) : null,
      result_truncated: oversized,
      result_artifact: (payload.result_artifact as Record<string, string> | null | undefined) ?? null,
      input_required: payload.input_required ?? null,
      error: clip(payload.error),
      next_poll_at: POLLABLE.includes(status) ? this.now() + wait * 1000 : null,
      ...this.attention(task, status),
    };
  }

  /**
   * The notification fields when a task moves into `status`: a change to a state that needs the user's attention
   * queues a delivery now (upstream: a new event version); the same state again (an input-waiting task polled
   * again) changes nothing.
   */
  private attention(task: McpTaskRecord, status: McpTaskStatus): Partial<McpTaskRecord> {
    if (status === task.status || status === "submitted" || status === "working") return {};
    return { notification_status: "pending", next_notification_at: this.now(), notification_attempt_count: 0, notification_error: null, notification_run_id: null };
  }

  /** One status call for one claimed task, its answer written under the lease; never throws. */
  private async pollTask(task: McpTaskRecord): Promise<void> {
    const tool = task.driver_data.status_tool;
    const polledAt = new Date(this.now()).toISOString();
    const fence = { lease: "lease" as const, owner: this.owner };
    try {
      const payload = parseStructured(StatusPayload, await this.call(task.server_name, tool, { task_id: task.remote_task_id }), tool);
      await this.store.update(task.id, { ...this.applied(payload, task), last_polled_at: polledAt, last_poll_error: null, consecutive_poll_error_count: 0 }, fence);
    } catch (err) {
      const message = clip((err as Error).message);
      if (err instanceof McpTaskProtocolError) {
        await this.store.update(task.id, { status: "failed", error: message, last_polled_at: polledAt, next_poll_at: null, ...this.attention(task, "failed") }, fence);
        return;
      }
      const cfg = this.config();
      const errors = task.consecutive_poll_error_count + 1;
      const backoff = Math.min(cfg.poll_interval_seconds * 2 ** errors, cfg.max_poll_backoff_seconds);
      await this.store.update(task.id, { last_poll_error: message, last_polled_at: polledAt, consecutive_poll_error_count: errors, next_poll_at: this.now() + backoff * 1000 }, fence);
    }
  }

  /**
   * One scan: claims the due tasks (at most `max_concurrent_polls`) and calls their status tool, then delivers the
   * updates that are due. Scans of one process never overlap; a failing store is logged by the caller's next scan.
   */
  pollOnce(): Promise<void> {
    this.scanning ??= (async () => {
      const cfg = this.config();
      const due = await this.store.claimDue(this.now(), cfg.max_concurrent_polls, this.owner, cfg.lease_seconds * 1000);
      await Promise.all(due.map((t) => this.pollTask(t).catch(() => undefined)));
      await this.notifier?.deliverDue();
    })().finally(() => void (this.scanning = null));
    return this.scanning;
  }

  /**
   * Cancels a task of the user's thread through the server's cancel tool. A finished task is returned unchanged;
   * a failed cancel call is recorded (`last_cancel_error`) and the task stays tracked.
   * @returns the task after the attempt, or null when the user has no such task on that thread.
   */
  async cancel(taskId: string, threadId: string, userId: string): Promise<McpTaskRecord | null> {
    const task = await this.store.get(taskId, userId);
    if (!task || task.thread_id !== threadId) return null;
    if (!POLLABLE.includes(task.status)) return task;
    const tool = task.driver_data.cancel_tool;
    const requested = { cancel_requested_at: task.cancel_requested_at ?? new Date(this.now()).toISOString(), cancel_attempt_count: task.cancel_attempt_count + 1 };
    try {
      const payload = parseStructured(StatusPayload, await this.call(task.server_name, tool, { task_id: task.remote_task_id }), tool);
      return this.store.update(task.id, { ...requested, ...this.applied(payload, task), last_cancel_error: null });
    } catch (err) {
      return this.store.update(task.id, { ...requested, last_cancel_error: clip((err as Error).message) });
    }
  }

  /** Starts the poller (its timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    // A scan that fails as a whole (the database unreachable) is logged; the next scan tries again.
    this.timer = setInterval(() => void this.pollOnce().catch((err) => getLogger().warn({ err: (err as Error).message }, `MCP task scan failed: ${(err as Error).message}`)), this.config().poll_interval_seconds * 1000);
    this.timer.unref?.();
  }

  /** Stops the poller and waits for a scan in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.scanning;
  }
}
