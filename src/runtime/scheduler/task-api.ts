// What the scheduled-task routes do (DeerFlow app/gateway/routers/scheduled_tasks.py), minus HTTP: validate a
// create or update against the schedule rules and the `scheduler` limits, check thread ownership, store. Every
// check runs before anything is written, so a refused request stores nothing.
import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.js";
import type { AppConfig } from "../../config/schema.js";
import { assertThreadId, newId } from "../ids.js";
import type { ThreadRepository } from "../persistence/repositories.js";
import { assistantIdToAgentName } from "../runs/run-config.js";
import type { SchedulerService } from "./scheduler-service.js";
import { nextRunAt, normalizeCron, ScheduleError, shortestCronGapSeconds, validateTimezone } from "./schedules.js";
import type { ScheduledTask, ScheduledTaskStore, TaskUpdate } from "./task-store.js";

/** Longest title (upstream's column is 255 characters) and prompt (gateway bound) accepted. */
const MAX_TITLE_CHARS = 255;
const MAX_PROMPT_CHARS = 100_000;

/** Upstream `ScheduledTaskCreateRequest`, plus the run's agent (`assistant_id`) and model (`model_name`). */
export const TaskCreateSchema = z.looseObject({
  thread_id: z.string().max(128).nullish(),
  context_mode: z.string().default("fresh_thread_per_run"),
  title: z.string().min(1).max(MAX_TITLE_CHARS),
  prompt: z.string().min(1).max(MAX_PROMPT_CHARS),
  schedule_type: z.string(),
  schedule_spec: z.record(z.string(), z.unknown()),
  timezone: z.string().max(64),
  assistant_id: z.string().max(128).nullish(),
  model_name: z.string().max(256).nullish(),
});
/** Upstream `ScheduledTaskUpdateRequest` (every field optional; `schedule_type` cannot change). */
export const TaskUpdateSchema = z.looseObject({
  context_mode: z.string().nullish(),
  thread_id: z.string().max(128).nullish(),
  title: z.string().min(1).max(MAX_TITLE_CHARS).nullish(),
  prompt: z.string().min(1).max(MAX_PROMPT_CHARS).nullish(),
  schedule_spec: z.record(z.string(), z.unknown()).nullish(),
  timezone: z.string().max(64).nullish(),
});

/** What the task API needs. */
export interface TaskApiDeps {
  store: ScheduledTaskStore;
  threads: ThreadRepository;
  scheduler: SchedulerService;
  getAppConfig: () => AppConfig;
}

const CONTEXT_MODES = new Set(["fresh_thread_per_run", "reuse_thread"]);

async function checkThread(deps: TaskApiDeps, contextMode: string, threadId: string | null | undefined, userId: string): Promise<void> {
  if (!CONTEXT_MODES.has(contextMode)) throw new ValidationError("Unsupported context_mode");
  if (contextMode !== "reuse_thread") return;
  if (!threadId) throw new ValidationError("reuse_thread requires thread_id");
  assertThreadId(threadId);
  if (!(await deps.threads.getOwned(threadId, userId))) throw new NotFoundError("Thread not found");
}

/**
 * Normalises the schedule and computes its first firing, applying upstream's rules (5-field cron, known zone,
 * a one-shot at least `min_once_delay_seconds` ahead) and the gateway's `min_interval_seconds`.
 * @returns the normalised spec and `next_run_at`. @throws ValidationError (422) naming the rule broken.
 */
export function planSchedule(deps: Pick<TaskApiDeps, "scheduler">, type: string, rawSpec: Record<string, unknown>, timezone: string): { spec: Record<string, unknown>; next: Date } {
  const { min_once_delay_seconds: onceDelay, min_interval_seconds: minInterval } = deps.scheduler.config;
  if (type !== "once" && type !== "cron") throw new ValidationError("Unsupported schedule_type");
  const spec = { ...rawSpec };
  validateTimezone(timezone);
  const now = deps.scheduler.now();
  if (type === "cron") {
    if (typeof spec.cron !== "string") throw new ValidationError("cron schedule requires schedule_spec.cron");
    spec.cron = normalizeCron(spec.cron);
    const gap = shortestCronGapSeconds(spec.cron as string, timezone, now);
    if (gap < minInterval) throw new ScheduleError(`cron schedule fires every ${gap} seconds; the minimum interval is ${minInterval} seconds (scheduler.min_interval_seconds)`);
  }
  const next = nextRunAt(type, spec, timezone, now);
  if (!next) {
    if (type === "once") throw new ScheduleError("once schedule must be in the future");
    throw new ScheduleError("cron schedule never fires");
  }
  if (type === "once" && (next.getTime() - now.getTime()) / 1000 < onceDelay) {
    throw new ScheduleError(`once schedule must be at least ${onceDelay} seconds in the future`);
  }
  return { spec, next };
}

/** Creates a task for `userId`. @throws ValidationError (422), NotFoundError (404: thread not the user's). */
export async function createTask(deps: TaskApiDeps, userId: string, body: z.infer<typeof TaskCreateSchema>): Promise<ScheduledTask> {
  await checkThread(deps, body.context_mode, body.thread_id, userId);
  const { spec, next } = planSchedule(deps, body.schedule_type, body.schedule_spec, body.timezone);
  const agent = assistantIdToAgentName(body.assistant_id);
  const modelName = body.model_name ?? null;
  if (modelName !== null && !deps.getAppConfig().models.some((m) => m.name === modelName)) throw new ValidationError(`Unknown model_name '${modelName.slice(0, 80)}'`);
  const at = new Date().toISOString();
  const task: ScheduledTask = {
    id: `task-${newId().replace(/-/g, "")}`, user_id: userId, thread_id: body.context_mode === "reuse_thread" ? (body.thread_id ?? null) : null,
    context_mode: body.context_mode as ScheduledTask["context_mode"], assistant_id: agent ?? "lead_agent", model_name: modelName,
    title: body.title, prompt: body.prompt, schedule_type: body.schedule_type as ScheduledTask["schedule_type"], schedule_spec: spec,
    timezone: body.timezone, status: "enabled", overlap_policy: "skip", next_run_at: next.toISOString(), last_run_at: null,
    last_run_id: null, last_thread_id: null, last_error: null, run_count: 0, created_at: at, updated_at: at,
  };
  const max = deps.scheduler.config.max_tasks_per_user;
  if (!(await deps.store.insertTask(task, max))) throw new ValidationError(`Scheduled task limit reached: at most ${max} tasks per user (scheduler.max_tasks_per_user)`);
  return task;
}

/** The user's task, or NotFoundError "Scheduled task not found" (another user's reads as missing). */
export async function ownedTask(deps: Pick<TaskApiDeps, "store">, taskId: string, userId: string): Promise<ScheduledTask> {
  const task = await deps.store.getTask(taskId, userId);
  if (!task) throw new NotFoundError("Scheduled task not found");
  return task;
}

/** Upstream `_ensure_task_mutable`: a task being fired cannot change. @throws ConflictError (409). */
export function ensureMutable(task: ScheduledTask): void {
  if (task.status === "running") throw new ConflictError("Scheduled task is currently running; retry after the active execution finishes");
}

/** Applies a PATCH (upstream `update_scheduled_task`): a new schedule or zone recomputes `next_run_at` and re-arms a finished task. */
export async function updateTask(deps: TaskApiDeps, taskId: string, userId: string, body: z.infer<typeof TaskUpdateSchema>): Promise<ScheduledTask> {
  const existing = await ownedTask(deps, taskId, userId);
  ensureMutable(existing);
  const update: TaskUpdate = {};
  const contextMode = body.context_mode ?? existing.context_mode;
  const threadId = body.thread_id ?? existing.thread_id;
  await checkThread(deps, contextMode, threadId, userId);
  update.context_mode = contextMode as ScheduledTask["context_mode"];
  update.thread_id = contextMode === "reuse_thread" ? threadId : null;
  if (body.title != null) update.title = body.title;
  if (body.prompt != null) update.prompt = body.prompt;
  if (body.schedule_spec != null || body.timezone != null) {
    const timezone = body.timezone ?? existing.timezone;
    const { spec, next } = planSchedule(deps, existing.schedule_type, body.schedule_spec ?? existing.schedule_spec, timezone);
    Object.assign(update, { schedule_spec: spec, timezone, next_run_at: next.toISOString() });
    // A finished task pushed into the future is re-armed, or it would show a next_run_at that never fires.
    if (["completed", "failed", "cancelled"].includes(existing.status)) update.status = "enabled";
  }
  const updated = await deps.store.updateTask(taskId, userId, update);
  if (!updated) throw new NotFoundError("Scheduled task not found");
  return updated;
}

/** Pause (`paused`) or resume (`enabled`) a task. @throws NotFoundError, ConflictError while it is being fired. */
export async function setTaskStatus(deps: TaskApiDeps, taskId: string, userId: string, status: "paused" | "enabled"): Promise<ScheduledTask> {
  ensureMutable(await ownedTask(deps, taskId, userId));
  const updated = await deps.store.updateTask(taskId, userId, { status });
  if (!updated) throw new NotFoundError("Scheduled task not found");
  return updated;
}
