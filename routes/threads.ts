// Thread routes (LangGraph API): create, get, state.
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { NotFoundError, ValidationError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/run-service.js";
import { zodIssuesToDetail } from "../src/runtime/run-request.js";
import { readThreadState } from "../src/runtime/thread-state-reader.js";
import type { ThreadRecord } from "../src/runtime/thread-store.js";

/** `POST /threads` body; the SDK may add `if_exists`, `supersteps`, `ttl`, `graph_id` (accepted, ignored). */
const ThreadCreateSchema = z.looseObject({
  thread_id: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

/** Registers the thread routes under the given prefix (`""` or `/api`). */
export async function threadRoutes(app: FastifyInstance): Promise<void> {
  const { persistence } = app.deerflow;

  const threadView = async (thread: ThreadRecord) => {
    const state = await readThreadState(persistence.checkpointer, thread.thread_id);
    return { ...thread, values: state.values, interrupts: {} };
  };

  app.post("/threads", async (request) => {
    const parsed = ThreadCreateSchema.safeParse(request.body ?? {});
    if (!parsed.success) throw new ValidationError("Invalid thread", zodIssuesToDetail(parsed.error.issues));
    const threadId = parsed.data.thread_id ?? randomUUID();
    assertThreadId(threadId);
    return threadView(persistence.threads.create(threadId, parsed.data.metadata ?? {}));
  });

  app.get<{ Params: { thread_id: string } }>("/threads/:thread_id", async (request) => {
    const { thread_id: threadId } = request.params;
    assertThreadId(threadId);
    const thread = persistence.threads.get(threadId);
    if (!thread) throw new NotFoundError(`Thread ${threadId} not found`);
    return threadView(thread);
  });

  app.get<{ Params: { thread_id: string } }>("/threads/:thread_id/state", async (request) => {
    const { thread_id: threadId } = request.params;
    assertThreadId(threadId);
    if (!persistence.threads.get(threadId)) throw new NotFoundError(`Thread ${threadId} not found`);
    return readThreadState(persistence.checkpointer, threadId);
  });
}
