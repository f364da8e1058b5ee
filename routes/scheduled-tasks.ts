// Scheduled tasks (DeerFlow app/gateway/routers/scheduled_tasks.py), under `/api`: list, create, read, update,
// delete, pause, resume, trigger, run history, and a thread's tasks. Every task belongs to the caller; another
// user's task or thread answers 404. The logic is src/runtime/scheduler/task-api.ts; this file is HTTP only.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ConflictError, UpstreamUnavailableError } from "../src/errors.js";
import { createTask, ownedTask, setTaskStatus, TaskCreateSchema, TaskUpdateSchema, updateTask, type TaskApiDeps } from "../src/runtime/scheduler/task-api.js";
import { doc, validInput } from "./openapi.js";
import { ownedThread } from "./thread-access.js";

type TaskParams = { Params: { task_id: string } };
const RunsQuery = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50), offset: z.coerce.number().int().min(0).default(0) });

/** Registers the scheduled-task routes (prefix `/api`). */
export async function scheduledTaskRoutes(app: FastifyInstance): Promise<void> {
  const deps = (): TaskApiDeps => ({ store: app.deerflow.persistence.scheduledTasks, threads: app.deerflow.persistence.threads, scheduler: app.deerflow.scheduler, getAppConfig: app.deerflow.getAppConfig });
  const user = (request: FastifyRequest) => principalOf(request).id;
  const tag = "scheduled-tasks";

  app.get("/scheduled-tasks", { schema: doc(tag, "The caller's scheduled tasks, newest first") }, async (request) => deps().store.listTasks(user(request)));
  app.post("/scheduled-tasks", { schema: doc(tag, "Create a scheduled task (cron or once)", { body: TaskCreateSchema }) }, async (request) => createTask(deps(), user(request), validInput(TaskCreateSchema, request.body)));
  app.get<TaskParams>("/scheduled-tasks/:task_id", { schema: doc(tag, "One scheduled task") }, async (request) => ownedTask(deps(), request.params.task_id, user(request)));
  app.patch<TaskParams>("/scheduled-tasks/:task_id", { schema: doc(tag, "Update a scheduled task", { body: TaskUpdateSchema }) }, async (request) =>
    updateTask(deps(), request.params.task_id, user(request), validInput(TaskUpdateSchema, request.body)),
  );
  app.post<TaskParams>("/scheduled-tasks/:task_id/pause", { schema: doc(tag, "Pause a scheduled task") }, async (request) => setTaskStatus(deps(), request.params.task_id, user(request), "paused"));
  app.post<TaskParams>("/scheduled-tasks/:task_id/resume", { schema: doc(tag, "Resume a paused scheduled task") }, async (request) => setTaskStatus(deps(), request.params.task_id, user(request), "enabled"));
  app.post<TaskParams>("/scheduled-tasks/:task_id/trigger", { schema: doc(tag, "Fire a scheduled task now") }, async (request) => {
    const task = await ownedTask(deps(), request.params.task_id, user(request));
    const result = await app.deerflow.scheduler.trigger(task);
    if (result.outcome === "conflict") throw new ConflictError(result.error ?? "Scheduled task trigger conflicted with an active run");
    if (result.outcome === "failed") throw new UpstreamUnavailableError(result.error ?? "Scheduled task trigger failed");
    return { id: task.id, triggered: true };
  });
  app.delete<TaskParams>("/scheduled-tasks/:task_id", { schema: doc(tag, "Delete a scheduled task and its run history") }, async (request) => {
    const task = await ownedTask(deps(), request.params.task_id, user(request));
    return { id: task.id, deleted: await deps().store.deleteTask(task.id, user(request)) };
  });
  app.get<TaskParams>("/scheduled-tasks/:task_id/runs", { schema: doc(tag, "A scheduled task's run history, newest first", { querystring: RunsQuery }) }, async (request) => {
    const query = validInput(RunsQuery, request.query, "query");
    const task = await ownedTask(deps(), request.params.task_id, user(request));
    return deps().store.listRuns(task.id, query.limit, query.offset);
  });
  app.get<{ Params: { thread_id: string } }>("/threads/:thread_id/scheduled-tasks", { schema: doc(tag, "The caller's scheduled tasks on one thread") }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    return deps().store.listTasks(user(request), request.params.thread_id);
  });
}
