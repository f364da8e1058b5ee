// Id rules of the LangGraph-compatible routes.
import { v7 as uuidv7 } from "uuid";
import { ValidationError } from "../errors.js";

/** DeerFlow's thread-id rule (DeerFlow gateway `threads.py` thread-id pattern): letters, digits, `_` and `-`, 1-64 characters. */
export const THREAD_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Validates a thread id.
 * @throws ValidationError (422) "Invalid thread_id ..." unless it matches `^[A-Za-z0-9_-]{1,64}$`.
 */
export function assertThreadId(threadId: unknown): asserts threadId is string {
  if (typeof threadId !== "string" || !THREAD_ID_PATTERN.test(threadId)) {
    throw new ValidationError(`Invalid thread_id ${JSON.stringify(threadId)}: must match ${THREAD_ID_PATTERN.source}`);
  }
}

/**
 * A new server-generated run or thread id: a UUIDv7 (RFC 9562; the time in ms first, then random bits), as the
 * LangGraph API server generates run ids. Time-ordered keys land next to each other in the SQLite and PostgreSQL
 * indexes (runs, threads, checkpoints and their writes are keyed by them), where random v4 keys touch a different
 * page per insert. Still a plain UUID string for clients.
 */
export function newId(): string {
  return uuidv7();
}
