// Ownership checks for the web-app routes whose thread id is not the route's own `:thread_id` guard target or
// that also need a run: a thread, run or file of another user answers 404 as if it did not exist (the same rule
// as routes/guards.ts `requireThread`).
import type { FastifyInstance, FastifyRequest } from "fastify";
import { principalOf } from "../src/auth/principal.js";
import { NotFoundError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/runs/run-service.js";
import type { RunRecord, ThreadRecord } from "../src/runtime/persistence/repositories.js";

/**
 * The thread `threadId` if it exists and belongs to the caller.
 * @throws ValidationError (422) for a malformed id; NotFoundError (404) when missing or owned by another user.
 */
export async function ownedThread(app: FastifyInstance, request: FastifyRequest, threadId: string): Promise<ThreadRecord> {
  assertThreadId(threadId);
  const thread = await app.deerflow.persistence.threads.getOwned(threadId, principalOf(request).id);
  if (!thread) throw new NotFoundError(`Thread ${threadId} not found`);
  return thread;
}

/**
 * The run `runId` of the caller's thread `threadId`.
 * @throws NotFoundError (404) when the thread is not the caller's or the run is not one of its runs.
 */
export async function ownedRun(app: FastifyInstance, request: FastifyRequest, threadId: string, runId: string): Promise<RunRecord> {
  await ownedThread(app, request, threadId);
  const run = await app.deerflow.persistence.runs.get(runId);
  if (!run || run.thread_id !== threadId) throw new NotFoundError(`Run ${runId} not found`);
  return run;
}
