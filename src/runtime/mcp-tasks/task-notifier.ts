// Port of DeerFlow app/mcp_tasks/service.py `_run_notifications` / `_notify_one` and app/gateway/services.py
// `launch_mcp_task_notification_run`: a task update that needs the user's attention reaches its thread as a new
// agent run, whose input is a hidden user turn carrying the task's event; the model explains it to the user.
import { neutralizeUntrustedTags } from "../../agents/middlewares/input-sanitization.js";
import { ConflictError, NotFoundError } from "../../errors.js";
import type { McpTasksConfig } from "./task-config.js";
import type { McpTaskRecord, McpTaskStore } from "./task-store.js";

/** Upstream `_MAX_NOTIFICATION_ATTEMPTS`: failed deliveries after which a task's update is dead-lettered. */
export const MAX_NOTIFICATION_ATTEMPTS = 5;
const MAX_ERROR_CHARS = 500;

/** What delivery needs from the app: start a run on a thread, read a run's outcome. */
export interface NotificationLauncher {
  /**
   * Starts the delivery run as the thread's owner.
   * @throws ConflictError while the thread has a run (tried again next scan); NotFoundError when the thread is gone
   *   (given up); any other error is retried with backoff.
   */
  launch(o: { threadId: string; userId: string; assistantId: string; taskId: string; attempt: number; prompt: string }): Promise<{ runId: string }>;
  /** The run's status (`pending`, `running`, `success`, `error`, `timeout`, `interrupted`) and error, or null when unknown. */
  runStatus(runId: string): Promise<{ status: string; error: string | null } | null>;
}

/** Upstream `_notification_event`: the immutable snapshot of a task the delivery run tells the model about. */
export function notificationEvent(task: McpTaskRecord, trackingDegraded: boolean): Record<string, unknown> {
  return {
    task_id: task.id, task_name: task.task_name, status: task.status, result: task.result, result_preview: task.result_preview,
    result_truncated: task.result_truncated, result_artifact: task.result_artifact, error: task.error, input_required: task.input_required,
    tracking_degraded: trackingDegraded, last_poll_error: trackingDegraded ? task.last_poll_error : null,
  };
}

/**
 * Upstream `_mcp_task_notification_prompt`: the instruction, then the event as JSON with sorted keys between the
 * user-input boundary markers, its tags neutralized (the remote server's text is untrusted).
 */
export function notificationPrompt(event: Record<string, unknown>): string {
  const sorted = (v: unknown): unknown => (Array.isArray(v) ? v.map(sorted) : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])])) : v);
  const payload = `--- BEGIN USER INPUT ---\n${neutralizeUntrustedTags(JSON.stringify(sorted(event)))}\n--- END USER INPUT ---`;
  const instruction =
    "A durable background MCP task has an update that requires the user's attention. Explain the update clearly and concisely. " +
    "Do not expose or ask for a remote task ID. When status is input_required, show the question but explain that this MCP " +
    "integration cannot resume the remote task with user input yet. When tracking_degraded is true, explain that DeerFlow will " +
    "continue retrying at a lower frequency.";
  return `${instruction}\n\n${payload}`;
}

const clip = (s: string) => s.slice(0, MAX_ERROR_CHARS);

/**
 * Delivers due task updates: claims them (a lease, so one process delivers each), starts the run or, once
 * dispatched, follows it to its end. A run that ends `success` delivers the update; one that fails, or a start
 * that fails, is retried after `poll_interval_seconds * 2^failures` (capped at `max_poll_backoff_seconds`); after
 * {@link MAX_NOTIFICATION_ATTEMPTS} failures, or when the thread is gone, the update is dead-lettered. A thread
 * busy with another run is tried again next scan, at no attempt's cost.
 */
export class TaskNotifier {
  constructor(
    private readonly store: McpTaskStore,
    private readonly config: () => McpTasksConfig,
    private readonly launcher: NotificationLauncher,
    private readonly owner: string,
    private readonly now: () => number,
  ) {}

  /** One delivery scan (at most `max_concurrent_polls` tasks); never throws for one task's failure. */
  async deliverDue(): Promise<void> {
    const cfg = this.config();
    const claimed = await this.store.claimNotifications(this.now(), cfg.max_concurrent_polls, this.owner, cfg.lease_seconds * 1000);
    await Promise.all(claimed.map((t) => this.deliver(t).catch((err) => this.set(t, this.failed(t, (err as Error).message)))));
  }

  private set(task: McpTaskRecord, changes: Partial<McpTaskRecord>): Promise<unknown> {
    return this.store.update(task.id, changes, { lease: "notification_lease", owner: this.owner });
  }

  /** A failed attempt: retried with backoff. */
  private failed(task: McpTaskRecord, error: string): Partial<McpTaskRecord> {
    const cfg = this.config();
    const attempts = task.notification_attempt_count + 1;
    const wait = Math.min(cfg.poll_interval_seconds * 2 ** Math.min(attempts, 16), cfg.max_poll_backoff_seconds);
    return { notification_status: "retry", notification_attempt_count: attempts, notification_error: clip(error), next_notification_at: this.now() + wait * 1000 };
  }

  private async deliver(task: McpTaskRecord): Promise<void> {
    if (task.notification_attempt_count >= MAX_NOTIFICATION_ATTEMPTS) {
      const error = `Notification delivery stopped after ${task.notification_attempt_count} failed attempts: ${task.notification_error ?? "delivery failed"}`;
      await this.set(task, { notification_status: "dead_letter", notification_error: clip(error), next_notification_at: null });
      return;
    }
    if (task.notification_status === "dispatched") return this.follow(task);
    const degraded = task.consecutive_poll_error_count >= this.config().tracking_degraded_after_errors;
    let runId: string;
    try {
      ({ runId } = await this.launcher.launch({
        threadId: task.thread_id, userId: task.user_id, assistantId: task.assistant_id ?? "lead_agent", taskId: task.id,
        attempt: task.notification_attempt_count, prompt: notificationPrompt(notificationEvent(task, degraded)),
      }));
    } catch (err) {
      if (err instanceof ConflictError) {
        await this.set(task, { next_notification_at: this.now() + this.config().poll_interval_seconds * 1000 });
      } else if (err instanceof NotFoundError) {
        await this.set(task, { notification_status: "dead_letter", notification_error: clip((err as Error).message), next_notification_at: null });
      } else {
        await this.set(task, this.failed(task, (err as Error).message));
      }
      return;
    }
    await this.set(task, { notification_status: "dispatched", notification_run_id: runId, next_notification_at: this.now() + this.config().poll_interval_seconds * 1000 });
  }

  /** A dispatched update: delivered when its run succeeded, retried when it failed, looked at again while it runs. */
  private async follow(task: McpTaskRecord): Promise<void> {
    const run = task.notification_run_id ? await this.launcher.runStatus(task.notification_run_id) : null;
    if (!run) return void (await this.set(task, this.failed(task, `Notification run '${task.notification_run_id}' was not found`)));
    if (run.status === "success") return void (await this.set(task, { notification_status: "delivered", notification_error: null, next_notification_at: null }));
    if (run.status === "pending" || run.status === "running") {
      return void (await this.set(task, { next_notification_at: this.now() + this.config().poll_interval_seconds * 1000 }));
    }
    await this.set(task, this.failed(task, run.error ?? `Notification run ended with ${run.status}`));
  }
}
