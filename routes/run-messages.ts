// The remaining message and feedback routes of DeerFlow's gateway (app/gateway/routers/thread_runs.py
// `/messages`, `/runs/{run_id}/messages`; runs.py `/api/runs/{run_id}/messages|feedback`; feedback.py `/stats`
// and delete-by-id), with upstream's shapes. Another user's thread or run answers 404 like a missing one.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { NotFoundError } from "../src/errors.js";
import type { RunRecord } from "../src/runtime/persistence/repositories.js";
import { cursorPage, loadThreadMessageRows } from "../src/runtime/webapp/thread-messages.js";
import { doc, validInput } from "./openapi.js";
import { ownedRun, ownedThread } from "./thread-access.js";

const CursorQuery = z.looseObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before_seq: z.coerce.number().int().min(1).optional(),
  after_seq: z.coerce.number().int().min(1).optional(),
});
type RunParams = { Params: { thread_id: string; run_id: string } };

/**
 * Registers under `/api`: `GET /threads/:id/messages` (a list of the thread's visible message rows,
 * `?limit=1..200&before_seq=&after_seq=`), `GET /threads/:id/runs/:run_id/messages` and `GET /runs/:run_id/messages`
 * (`{data, has_more}`: that run's rows), `GET /runs/:run_id/feedback` (a list), `GET
 * /threads/:id/runs/:run_id/feedback/stats` (`{run_id, total, positive, negative}`), `DELETE
 * /threads/:id/runs/:run_id/feedback/:feedback_id` (`{success: true}`; 404 when it is not that run's).
 */
export async function runMessageRoutes(app: FastifyInstance): Promise<void> {
  const { persistence } = app.deerflow;
  // The store thread-feed.ts writes (files, or the shared database on PostgreSQL).
  const feedback = persistence.feedback;
  const rowsOf = async (threadId: string) => loadThreadMessageRows(persistence.checkpointer, threadId, await persistence.runs.list(threadId, { limit: 10_000 }));
  const cursor = (request: FastifyRequest) => {
    const q = validInput(CursorQuery, request.query, "query");
    return { limit: q.limit, beforeSeq: q.before_seq, afterSeq: q.after_seq };
  };
  const runPage = async (request: FastifyRequest, run: RunRecord) => {
    const { limit, ...c } = cursor(request);
    return cursorPage((await rowsOf(run.thread_id)).filter((r) => r.run_id === run.run_id), limit, c);
  };
  /** A run of one of the caller's threads, found by its id alone (upstream `_resolve_run`). */
  const ownedRunById = async (request: FastifyRequest, runId: string) => {
    const run = await persistence.runs.get(runId);
    if (!run) throw new NotFoundError(`Run ${runId} not found`);
    return ownedRun(app, request, run.thread_id, runId).catch(() => {
      throw new NotFoundError(`Run ${runId} not found`);
    });
  };

  app.get<{ Params: { thread_id: string } }>("/threads/:thread_id/messages", { schema: doc("threads", "The thread's visible messages, across runs", { querystring: CursorQuery }) }, async (request) => {
    await ownedThread(app, request, request.params.thread_id);
    const { limit, ...c } = cursor(request);
    return cursorPage(await rowsOf(request.params.thread_id), limit, c).data;
  });
  app.get<RunParams>("/threads/:thread_id/runs/:run_id/messages", { schema: doc("runs", "A run's messages, one cursor page", { querystring: CursorQuery }) }, async (request) =>
    runPage(request, await ownedRun(app, request, request.params.thread_id, request.params.run_id)),
  );
  app.get<{ Params: { run_id: string } }>("/runs/:run_id/messages", { schema: doc("runs", "A run's messages by run id, one cursor page", { querystring: CursorQuery }) }, async (request) =>
    runPage(request, await ownedRunById(request, request.params.run_id)),
  );
  app.get<{ Params: { run_id: string } }>("/runs/:run_id/feedback", { schema: doc("runs", "The feedback on a run, by run id") }, async (request) => {
    const run = await ownedRunById(request, request.params.run_id);
    return await feedback.list(run.thread_id, run.run_id, principalOf(request).id);
  });
  app.get<RunParams>("/threads/:thread_id/runs/:run_id/feedback/stats", { schema: doc("runs", "Feedback counts of a run") }, async (request) => {
    const run = await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    const rows = await feedback.list(run.thread_id, run.run_id, principalOf(request).id);
    return { run_id: run.run_id, total: rows.length, positive: rows.filter((f) => f.rating > 0).length, negative: rows.filter((f) => f.rating < 0).length };
  });
  app.delete<RunParams & { Params: { feedback_id: string } }>("/threads/:thread_id/runs/:run_id/feedback/:feedback_id", { schema: doc("runs", "Delete one feedback of a run") }, async (request) => {
    const run = await ownedRun(app, request, request.params.thread_id, request.params.run_id);
    const removed = await feedback.delete(run.thread_id, run.run_id, principalOf(request).id, request.params.feedback_id);
    if (!removed) throw new NotFoundError(`Feedback ${request.params.feedback_id} not found in run ${run.run_id}`);
    return { success: true };
  });
}
