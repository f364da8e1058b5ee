// One firing of a scheduled task (DeerFlow app/scheduler/service.py `dispatch_task`): record the task run, start the
// agent run through the run service as the task's user, and write the outcome on the task. A task with an active run
// is skipped (scheduled) or refused (manual); the partial unique index on active task runs decides races.
import { ConflictError } from "../../errors.js";
import { newId } from "../ids.js";
import type { RunStatus } from "../wire/wire-enums.js";
import { nextRunAt } from "./schedules.js";
import { ActiveRunConflict, type AfterLaunch, type ScheduledTask, type ScheduledTaskStore, type TaskRunStatus, type TaskStatus } from "./task-store.js";

/** A started agent run: its ids, and a promise of its terminal status (and error). */
export interface LaunchedRun {
  runId: string;
  threadId: string;
  done: Promise<{ status: RunStatus; error?: string }>;
}

/** Starts the agent run of a task on `threadId` (`fresh`: create it) as the task's user. Throws the run service's errors. */
export type LaunchRun = (task: ScheduledTask, threadId: string, fresh: boolean, metadata: Record<string, unknown>) => Promise<LaunchedRun>;

/** What a dispatch did (upstream's outcome dict). */
export interface DispatchResult {
  outcome: "launched" | "skipped" | "conflict" | "failed";
  task_run_id: string | null;
  run_id: string | null;
  thread_id: string;
  error: string | null;
}

/** Upstream's error texts, kept byte for byte (the app shows them). */
export const SKIP_ACTIVE_RUN_ERROR = "skipped: a previous run of this task is still active";
const ACTIVE_RUN_CONFLICT_ERROR = "task already has an active run";
/** Written on task runs left active by a process that stopped (single-instance start-up sweep). */
export const RESTART_RECOVERY_ERROR = "interrupted: gateway restarted before the run reached a terminal state";

/** What {@link dispatchTask} needs. */
export interface DispatchDeps {
  store: ScheduledTaskStore;
  launch: LaunchRun;
  /** This process's lease owner id (fences a scheduled dispatch's writes). */
  leaseOwner: string;
  maxConcurrentRuns: number;
  /** Called with the outcome once a launched run has finished and been recorded. */
  onFinished?: () => void;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);
const next = (task: ScheduledTask, now: Date) => iso(nextRunAt(task.schedule_type, task.schedule_spec, task.timezone, now));

function statusAfterLaunch(task: ScheduledTask, trigger: string): TaskStatus {
  if (task.schedule_type === "once") return "running";
  return trigger === "manual" && task.status === "paused" ? "paused" : "enabled";
}

function statusAfterFailure(task: ScheduledTask, trigger: string): TaskStatus {
  // A failed manual trigger must not consume the task's future firing.
  if (trigger === "manual") return task.status === "running" ? "enabled" : task.status;
  return task.schedule_type === "once" ? "failed" : "enabled";
}

/**
 * Fires `task` once at `now`. `trigger` "scheduled" (claimed by the poller; its writes are fenced by the lease) or
 * "manual" (the trigger route: refused with `conflict` at the global `max_concurrent_runs` or when the task has an
 * active run). Never throws for the run's own failures: they are recorded on the task run and the task.
 */
export async function dispatchTask(deps: DispatchDeps, task: ScheduledTask, now: Date, trigger: "scheduled" | "manual"): Promise<DispatchResult> {
  const fresh = task.context_mode === "fresh_thread_per_run" || !task.thread_id;
  const threadId = fresh ? newId() : (task.thread_id as string);
  const fence = trigger === "scheduled" ? deps.leaseOwner : null;
  if (trigger === "manual" && (await deps.store.activeRuns()).length >= deps.maxConcurrentRuns) {
    return { outcome: "conflict", task_run_id: null, run_id: null, thread_id: threadId, error: "global concurrent-run limit reached" };
  }
  const taskRunId = `task-run-${newId().replace(/-/g, "")}`;
  const scheduledFor = trigger === "scheduled" && task.next_run_at ? task.next_run_at : now.toISOString();
  const row = { id: taskRunId, task_id: task.id, thread_id: threadId, run_id: null, scheduled_for: scheduledFor, trigger, error: null, started_at: null, finished_at: null, created_at: now.toISOString() };
  try {
    await deps.store.createRun({ ...row, status: "queued" });
  } catch (err) {
    if (!(err instanceof ActiveRunConflict)) throw err;
    if (trigger === "manual") return { outcome: "conflict", task_run_id: null, run_id: null, thread_id: threadId, error: ACTIVE_RUN_CONFLICT_ERROR };
    // The skip is recorded as a terminal row: outside the unique index, so it never conflicts with the live run.
    await deps.store.createRun({ ...row, status: "skipped", error: SKIP_ACTIVE_RUN_ERROR, started_at: now.toISOString(), finished_at: now.toISOString() });
    return finishSkip(deps, task, taskRunId, threadId, now, SKIP_ACTIVE_RUN_ERROR, fence, false);
  }
  let launched: LaunchedRun;
  try {
    launched = await deps.launch(task, threadId, fresh, { scheduled_task_id: task.id, scheduled_task_run_id: taskRunId, scheduled_trigger: trigger });
  } catch (err) {
    const error = (err as Error).message;
    // The thread is busy with another run (same-thread reuse): a scheduled firing is a skip, as upstream.
    if (err instanceof ConflictError && trigger === "scheduled") return finishSkip(deps, task, taskRunId, threadId, now, error, fence, true);
    await deps.store.updateRun(taskRunId, { status: "failed", error, started_at: now.toISOString(), finished_at: now.toISOString() });
    await deps.store.afterLaunch(task.id, { status: statusAfterFailure(task, trigger), next_run_at: next(task, now), last_run_at: now.toISOString(), last_run_id: null, last_thread_id: threadId, last_error: error, incrementRunCount: false, expectedLeaseOwner: fence });
    return { outcome: err instanceof ConflictError ? "conflict" : "failed", task_run_id: taskRunId, run_id: null, thread_id: threadId, error };
  }
  // Watch the run before any further write: a fast run may finish while the bookkeeping below is written.
  void launched.done.then((end) => finishRun(deps, task, taskRunId, launched.runId, end)).catch(() => undefined).finally(() => deps.onFinished?.());
  await deps.store.updateRun(taskRunId, { status: "running", run_id: launched.runId, started_at: now.toISOString() }, true);
  const after: AfterLaunch = { status: statusAfterLaunch(task, trigger), next_run_at: next(task, now), last_run_at: now.toISOString(), last_run_id: launched.runId, last_thread_id: launched.threadId, last_error: null, incrementRunCount: true, protectTerminal: true, expectedLeaseOwner: fence };
  await deps.store.afterLaunch(task.id, after);
  return { outcome: "launched", task_run_id: taskRunId, run_id: launched.runId, thread_id: launched.threadId, error: null };
}

async function finishSkip(deps: DispatchDeps, task: ScheduledTask, taskRunId: string, threadId: string, now: Date, error: string, fence: string | null, updateRow: boolean): Promise<DispatchResult> {
  if (updateRow) await deps.store.updateRun(taskRunId, { status: "skipped", error, started_at: now.toISOString(), finished_at: now.toISOString() });
  const once = task.schedule_type === "once";
  // A skipped one-shot lost its only occurrence: "failed" (never "completed", which would claim a run happened).
  await deps.store.afterLaunch(task.id, { status: once ? "failed" : "enabled", next_run_at: next(task, now), last_run_at: task.last_run_at, last_run_id: task.last_run_id, last_thread_id: task.last_thread_id, last_error: once ? error : null, incrementRunCount: false, expectedLeaseOwner: fence });
  return { outcome: "skipped", task_run_id: taskRunId, run_id: null, thread_id: threadId, error };
}

/** The task-run status of a terminal agent-run status (upstream `handle_run_completion`); null if not terminal. */
export function taskRunStatusOf(status: RunStatus): TaskRunStatus | null {
  if (status === "success") return "success";
  if (status === "interrupted") return "interrupted";
  if (status === "error" || status === "timeout") return "failed";
  return null;
}

/**
 * Records a finished agent run (upstream `handle_run_completion`): the task run's terminal status and error, the
 * task's `last_error`, and a one-shot's final status (`completed`, `cancelled` when interrupted, else `failed`).
 */
export async function finishRun(deps: Pick<DispatchDeps, "store">, task: Pick<ScheduledTask, "id" | "user_id">, taskRunId: string, runId: string, end: { status: RunStatus; error?: string }): Promise<void> {
  const status = taskRunStatusOf(end.status);
  if (!status) return;
  const error = status === "success" ? null : (end.error ?? (status === "interrupted" ? "run was interrupted before completion" : "run failed"));
  await deps.store.updateRun(taskRunId, { status, run_id: runId, error, finished_at: new Date().toISOString() });
  const current = await deps.store.getTask(task.id, task.user_id);
  if (!current) return;
  const onceStatus: TaskStatus = status === "success" ? "completed" : status === "interrupted" ? "cancelled" : "failed";
  await deps.store.updateTask(task.id, task.user_id, current.schedule_type === "once" ? { last_error: error, status: onceStatus } : { last_error: error });
}
