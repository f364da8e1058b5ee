// Route guards shared by every route plugin: the one "valid thread id + thread exists + the caller owns it" check.
import type { FastifyReply, FastifyRequest } from "fastify";
import { principalOf } from "../src/auth/principal.js";
import { NotFoundError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/runs/run-service.js";
import type { ThreadRecord } from "../src/runtime/persistence/repositories.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The thread of a `:thread_id` route, set by {@link requireThread}. */
    thread: ThreadRecord | null;
  }
}

/**
 * preHandler for routes with a `:thread_id` parameter: validates the id (422), then loads the thread owned by the
 * caller into `request.thread`. A missing thread and another user's thread both answer the same 404, so ids of
 * other users' threads cannot be probed.
 * @throws ValidationError (422) for a malformed id. @throws NotFoundError (404) "Thread <id> not found".
 */
export async function requireThread(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const threadId = (request.params as { thread_id?: unknown }).thread_id;
  assertThreadId(threadId);
  const thread = await request.server.deerflow.persistence.threads.getOwned(threadId, principalOf(request).id);
  if (!thread) throw new NotFoundError(`Thread ${threadId} not found`);
  request.thread = thread;
}

/**
 * preHandler for read routes where an unknown thread is simply empty (LangGraph history answers `[]`): validates
 * the id (422) and sets `request.thread` to the caller's thread, or null for a missing thread and for another
 * user's thread alike (so the answer never tells them apart).
 * @throws ValidationError (422) for a malformed id.
 */
export async function loadThreadIfOwned(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const threadId = (request.params as { thread_id?: unknown }).thread_id;
  assertThreadId(threadId);
  request.thread = (await request.server.deerflow.persistence.threads.getOwned(threadId, principalOf(request).id)) ?? null;
}

/**
 * The thread {@link requireThread} loaded for this request.
 * @throws Error when the route did not install the guard (a programming error, answered 500).
 */
export function threadOf(request: FastifyRequest): ThreadRecord {
  if (!request.thread) throw new Error("requireThread guard missing on this route");
  return request.thread;
}
