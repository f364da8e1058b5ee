// Id rules of the LangGraph-compatible routes.
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
