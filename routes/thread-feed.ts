// DeerFlow web-app thread routes (app/gateway/routers/thread_runs.py, threads.py goal, feedback.py): the paged
// message feed, token usage, a run's stored events and workspace changes, per-run feedback, and the thread goal.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ConflictError, NotFoundError, ValidationError } from "../src/errors.js";
import { buildGoal, MAX_GOAL_CONTINUATIONS } from "../src/runtime/goals/goal-state.js";
import { workspaceChangesResponse, type WorkspaceChangeResult } from "../src/runtime/workspace/workspace-changes.js";
import { WORKSPACE_CHANGES_EVENT, WORKSPACE_CHANGES_KEY } from "../src/runtime/workspace/run-workspace.js";
import { readThreadState } from "../src/runtime/threads/thread-state-reader.js";
import { compactThread } from "../src/runtime/webapp/compact.js";
import { aggregateTokenUsage, loadThreadMessageRows, pageRows } from "../src/runtime/webapp/thread-messages.js";
import { doc, validInput } from "./openapi.js";
import { ownedRun, ownedThread } from "./thread-access.js";

const PageQuery = z.looseObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before_seq: z.coerce.number().int().min(1).optional(),
});
const EventsQuery = z.looseObject({
  event_types: z.string().optional(),
  task_id: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(2000).default(500),
  after_seq: z.coerce.number().int().min(1).optional(),
});
const QueryBool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const ChangesQuery = z.looseObject({ include_files: QueryBool.default(true), include_diff: QueryBool.default(true) });
const FeedbackBody = z.looseObject({ rating: z.union([z.literal(1), z.literal(-1)]), comment: z.string().max(10_000).nullish(), message_id: z.string().nullish() });
const ContextSize = z.looseObject({ type: z.enum(["messages", "tokens", "fraction"]), value: z.number().positive() });
const CompactBody = z.looseObject({ force: z.boolean().default(true), keep: ContextSize.nullish(), agent_name: z.string().max(128).nullish(), model_name: z.string().max(128).nullish() });
const GoalBody = z.looseObject({ objective: z.string().trim().min(1).max(4000), max_continuations: z.number().int().min(0).max(MAX_GOAL_CONTINUATIONS).default(MAX_GOAL_CONTINUATIONS) });

type ThreadParams = { Params: { thread_id: string } };
type RunParams = { Params: { thread_id: string; run_id: string } };

/** The goal as the app reads it: null unless it is a goal object that was not cleared. */
const visibleGoal = (goal: unknown) => (goal && typeof goal === "object" && (goal as { status?: unknown }).status !== "cleared" ? goal : null);

/**
 * Registers, under `/api`: `GET /threads/:id/messages/page` (`?limit=1..200&before_seq=`), `GET
 * /threads/:id/token-usage`, `GET /threads/:id/runs/:run_id/events`, `GET .../runs/:run_id/workspace-changes`
 * (`?include_files=&include_diff=`, both default true; `available: false` when the run changed nothing), `GET|PUT|POST|DELETE .../runs/:run_id/feedback`,
 * `GET|PUT|DELETE /threads/:id/goal` (`{objective, max_continuations?: 0..8 = 8}`; PUT and DELETE 409 during a run), `POST /threads/:id/compact` (`{keep?, model_name?}`: summarize now; 409 during
 * a run). Another user's thread or run is 404.
 */
export async function threadFeedRoutes(app: FastifyInstance): Promise<void> {
  const { persistence, runEvents, threadService } = app.deerflow;
  // Files, or the shared database on PostgreSQL (feedback given through one process is read through any other).
  const feedback = persistence.feedback;

  app.get<ThreadParams>("/threads/:thread_id/messages/page", { schema: doc("threads", "Newest-first page of the thread's visible messages", { querystring: PageQuery }) }, async (request) => {
    const threadId = request.params.thread_id;
    await ownedThread(app, request, threadId);
    if (request.query && typeof request.query === "object" && "after_seq" in request.query) throw new ValidationError("after_seq is not supported by this backward-only endpoint");
    const query = validInput(PageQuery, request.query, "query");
    const page = pageRows(await loadThreadMessageRows(persistence.checkpointer, threadId, (await persistence.runs.list(threadId, { limit: 10_000 }))), query.limit, query.before_seq);
    // Feedback belongs on the last AI message of each run (upstream `_enrich_thread_message_page`).
    const ratings = await feedback.byRun(threadId, principalOf(request).id);
    const lastAiSeq = new Map<string, number>();
    for (const row of page.data) if (row.content.type === "ai" && row.run_id) lastAiSeq.set(row.run_id, row.seq);
    for (const row of page.data) {
      const f = lastAiSeq.get(row.run_id) === row.seq ? ratings.get(row.run_id) : undefined;
      row.feedback = f ? { feedback_id: f.feedback_id, rating: f.rating, comment: f.comment } : null;
    }
    return page;
  });

  app.get<ThreadParams>("/threads/:thread_id/token-usage", { schema: doc("threads", "Token usage of the thread, by model and caller") }, async (request) => {
    const threadId = request.params.thread_id;
    await ownedThread(app, request, threadId);
    const rows = await loadThreadMessageRows(persistence.checkpointer, threadId, (await persistence.runs.list(threadId, { limit: 10_000 })));
    return aggregateTokenUsage(threadId, rows, (await persistence.runs.list(threadId, { limit: 10_000 })));
  });

  app.get<RunParams>("/threads/:thread_id/runs/:run_id/events", { schema: doc("runs", "The run's stored event log", { querystring: EventsQuery }) }, async (request) => {
    await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    const query = validInput(EventsQuery, request.query, "query");
    return await runEvents.list(request.params.run_id, {
      eventTypes: query.event_types ? query.event_types.split(",").map((s) => s.trim()).filter(Boolean) : undefined,
      taskId: query.task_id,
      afterSeq: query.after_seq,
      limit: query.limit,
    });
  });

  app.get<RunParams>("/threads/:thread_id/runs/:run_id/workspace-changes", { schema: doc("runs", "Files the run added, changed or removed under workspace and outputs, with unified diffs", { querystring: ChangesQuery }) }, async (request) => {
    await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    const query = validInput(ChangesQuery, request.query, "query");
    const [event] = (await runEvents.list(request.params.run_id, { eventTypes: [WORKSPACE_CHANGES_EVENT], limit: 2000 })).slice(-1);
    const payload = (event?.metadata[WORKSPACE_CHANGES_KEY] ?? null) as WorkspaceChangeResult | null;
    return workspaceChangesResponse(payload, query.include_files, query.include_diff);
  });

  const upsertFeedback = async (request: import("fastify").FastifyRequest<RunParams>) => {
    const { thread_id: threadId, run_id: runId } = request.params;
    await ownedRun(app, request, threadId, runId);
    const body = validInput(FeedbackBody, request.body);
    return await feedback.upsert(threadId, runId, principalOf(request).id, body);
  };
  app.put<RunParams>("/threads/:thread_id/runs/:run_id/feedback", { schema: doc("runs", "Create or replace your feedback on a run", { body: FeedbackBody }) }, upsertFeedback);
  app.post<RunParams>("/threads/:thread_id/runs/:run_id/feedback", { schema: doc("runs", "Create or replace your feedback on a run", { body: FeedbackBody }) }, upsertFeedback);
  app.get<RunParams>("/threads/:thread_id/runs/:run_id/feedback", { schema: doc("runs", "Your feedback on a run") }, async (request) => {
    await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    return await feedback.list(request.params.thread_id, request.params.run_id, principalOf(request).id);
  });
  app.delete<RunParams>("/threads/:thread_id/runs/:run_id/feedback", { schema: doc("runs", "Delete your feedback on a run") }, async (request) => {
    await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    const removed = await feedback.delete(request.params.thread_id, request.params.run_id, principalOf(request).id);
    if (!removed) throw new NotFoundError("No feedback for this run");
    return { success: true };
  });

  app.post<ThreadParams>("/threads/:thread_id/compact", { schema: doc("threads", "Summarize the older part of the thread now", { body: CompactBody }) }, async (request) => {
    const threadId = request.params.thread_id;
    await ownedThread(app, request, threadId);
    const body = validInput(CompactBody, request.body);
    if ((await app.deerflow.runs.hasInFlight(threadId))) throw new ConflictError("Thread has a run in flight. Compact after the run finishes.");
    return compactThread(persistence.checkpointer, threadId, app.deerflow.getAppConfig(), { keep: body.keep as never, modelName: body.model_name });
  });

  app.get<ThreadParams>("/threads/:thread_id/goal", { schema: doc("threads", "The thread's goal (null when none)") }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const state = await readThreadState(persistence.checkpointer, request.params.thread_id);
    return { goal: visibleGoal(state.values.goal) };
  });

  app.put<ThreadParams>("/threads/:thread_id/goal", { schema: doc("threads", "Set or replace the thread's goal", { body: GoalBody }) }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const body = validInput(GoalBody, request.body);
    if (await app.deerflow.runs.hasInFlight(request.params.thread_id)) throw new ConflictError("Thread has a run in flight. Set the goal after the run finishes.");
    // Each later run evaluates the goal after its turn and continues while it may (src/runtime/goals/).
    const goal = buildGoal(body.objective, body.max_continuations);
    await threadService.updateState(request.params.thread_id, { values: { goal }, as_node: "goal" });
    return { goal };
  });

  app.delete<ThreadParams>("/threads/:thread_id/goal", { schema: doc("threads", "Clear the thread's goal") }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    // Upstream reserves the thread's checkpoint writes first: a run in flight owns the goal channel (409), goal or not.
    if (await app.deerflow.runs.hasInFlight(request.params.thread_id)) throw new ConflictError("Thread has a run in flight. Clear the goal after the run finishes.");
    const state = await readThreadState(persistence.checkpointer, request.params.thread_id);
    const goal = visibleGoal(state.values.goal) as Record<string, unknown> | null;
    if (goal) {
      // The goal channel keeps its value on a null write (mergeGoal), so clearing writes a cleared marker.
      await threadService.updateState(request.params.thread_id, { values: { goal: { ...goal, status: "cleared", updated_at: new Date().toISOString() } } });
    }
    return { goal: null };
  });
}
