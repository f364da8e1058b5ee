// Thread routes (LangGraph API): create, search, get, patch, delete, state get/update, history.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { BadRequestError, ConflictError } from "../src/errors.js";
import { ensureInitialCheckpoint } from "../src/runtime/threads/rollback.js";
import { assertThreadId } from "../src/runtime/runs/run-service.js";
import { readThreadState, readThreadStateAt } from "../src/runtime/threads/thread-state-reader.js";
import type { ThreadRecord } from "../src/runtime/persistence/repositories.js";
import { principalOf } from "../src/auth/principal.js";
import { ThreadStatusSchema } from "../src/runtime/wire/wire-enums.js";
import { loadThreadIfOwned, requireThread, threadOf } from "./guards.js";
import { pendingThreadOwner } from "../src/runtime/webapp/pending-threads.js";
import { doc, validInput } from "./openapi.js";
import { newId } from "../src/runtime/ids.js";

/** Metadata keys are matched as JSON paths by the stores: control characters (NUL breaks SQLite's path) are refused. */
const metadataSchema = z.record(z.string().regex(/^[^\u0000-\u001f]*$/, "metadata keys must not contain control characters"), z.unknown());
/** `POST /threads`; the SDK may add `supersteps`, `ttl`, `graph_id` (accepted, ignored). */
const ThreadCreateSchema = z.looseObject({ thread_id: z.string().nullish(), metadata: metadataSchema.nullish(), if_exists: z.enum(["raise", "do_nothing"]).nullish() });
/** `POST /threads/search`; the SDK may add `select`, `values`, `extract` (accepted, ignored). */
/**
 * Most metadata keys one search may filter on: each is one condition of the store's query, and SQLite refuses a
 * query past its expression depth (about 450 keys) with a 500. Over the limit is a 422 naming it.
 */
export const MAX_SEARCH_METADATA_KEYS = 64;

const ThreadSearchSchema = z.looseObject({
  metadata: metadataSchema
    .refine((m) => Object.keys(m).length <= MAX_SEARCH_METADATA_KEYS, { message: `metadata filters on at most ${MAX_SEARCH_METADATA_KEYS} keys` })
    .nullish(),
  status: ThreadStatusSchema.nullish(),
  ids: z.array(z.string()).nullish(),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  sort_by: z.string().nullish(),
  sort_order: z.enum(["asc", "desc"]).nullish(),
});
const ThreadPatchSchema = z.looseObject({ metadata: metadataSchema.nullish() });
const StateUpdateSchema = z.looseObject({
  values: z.record(z.string(), z.unknown()).nullish(),
  as_node: z.string().nullish(),
  checkpoint_id: z.string().nullish(),
  checkpoint: z.looseObject({ checkpoint_id: z.string().optional() }).nullish(),
});
const CheckpointQuerySchema = z.looseObject({ checkpoint: z.looseObject({ checkpoint_id: z.string(), thread_id: z.string().nullish() }) });
const HistorySchema = z.looseObject({
  limit: z.number().int().min(1).max(100).default(10),
  before: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  metadata: metadataSchema.nullish(),
});

type ThreadParams = { Params: { thread_id: string } };

/** A thread row as the LangGraph API shows it (the owner is the caller, so it is not repeated). */
function wireThread(thread: ThreadRecord): Omit<ThreadRecord, "owner_id"> {
  const { owner_id: _owner, ...rest } = thread;
  return rest;
}

/** Registers the thread routes under the given prefix (`""` or `/api`). */
export async function threadRoutes(app: FastifyInstance): Promise<void> {
  const { persistence, threadService } = app.deerflow;
  const { threads } = persistence;

  /** The Thread resource with its materialised state values. */
  const threadView = async (thread: ThreadRecord) => {
    const state = await readThreadState(persistence.checkpointer, thread.thread_id);
    return { ...wireThread(thread), values: state.values, interrupts: {} };
  };

  app.post("/threads", { schema: doc("threads", "Create a thread (idempotent for a given thread_id)", { body: ThreadCreateSchema }) }, async (request) => {
    const body = validInput(ThreadCreateSchema, request.body);
    const threadId = body.thread_id ?? newId();
    assertThreadId(threadId);
    const userId = principalOf(request).id;
    const existing = await threads.get(threadId);
    // Another user's thread id is taken, whatever if_exists says: never hand out (or reveal) their thread.
    if (existing && (body.if_exists === "raise" || existing.owner_id !== userId)) throw new ConflictError(`Thread ${threadId} already exists`);
    // So is an id another user claimed by uploading to it before it existed (routes/uploads.ts).
    const claimedBy = pendingThreadOwner(app.deerflow.sandbox.baseDir, threadId);
    if (claimedBy !== null && claimedBy !== userId) throw new ConflictError(`Thread ${threadId} already exists`);
    const thread = await threads.create(threadId, body.metadata ?? {}, userId);
    // Only a new thread gets the empty first checkpoint. An existing one is returned as it is (LangGraph's
    // `do_nothing`): it may have a run in flight, whose checkpoints must not get a second root.
    if (!existing) await ensureInitialCheckpoint(persistence.checkpointer, threadId);
    return threadView(thread);
  });

  app.post("/threads/search", { schema: doc("threads", "Search threads by metadata and status", { body: ThreadSearchSchema }) }, async (request) => {
    const body = validInput(ThreadSearchSchema, request.body);
    const found = await threads.search({
      ownerId: principalOf(request).id,
      metadata: body.metadata ?? undefined,
      status: body.status ?? undefined,
      ids: body.ids ?? undefined,
      limit: body.limit,
      offset: body.offset,
      sortBy: body.sort_by ?? undefined,
      sortOrder: body.sort_order ?? undefined,
    });
    // Search results carry only the title of the state (as DeerFlow's thread list reads it), not whole conversations.
    return Promise.all(
      found.map(async (t) => {
        // One thread whose checkpoint cannot be read back must not fail the listing for everyone.
        const values = await readThreadState(persistence.checkpointer, t.thread_id).then(
          (state) => state.values,
          (err: Error) => (request.log.warn({ thread_id: t.thread_id, err: err.message }, "unreadable checkpoint in search"), {} as Record<string, unknown>),
        );
        return { ...wireThread(t), values: values.title ? { title: values.title } : {}, interrupts: {} };
      }),
    );
  });

  app.get<ThreadParams>("/threads/:thread_id", { preHandler: requireThread, schema: doc("threads", "Get a thread with its state values") }, async (request) => threadView(threadOf(request)));

  app.patch<ThreadParams>("/threads/:thread_id", { preHandler: requireThread, schema: doc("threads", "Merge thread metadata", { body: ThreadPatchSchema }) }, async (request) => {
    const body = validInput(ThreadPatchSchema, request.body);
    return threadView((await threads.patchMetadata(request.params.thread_id, body.metadata ?? {}))!);
  });

  app.delete<ThreadParams>("/threads/:thread_id", { preHandler: requireThread, schema: doc("threads", "Delete a thread, its checkpoints, runs and files") }, async (request) => {
    await threadService.delete(request.params.thread_id);
    return { success: true, message: `Thread ${request.params.thread_id} deleted` };
  });

  app.get<ThreadParams>("/threads/:thread_id/state", { preHandler: requireThread, schema: doc("threads", "Current thread state") }, async (request) => {
    return readThreadState(persistence.checkpointer, request.params.thread_id);
  });

  app.get<{ Params: { thread_id: string; checkpoint_id: string } }>("/threads/:thread_id/state/:checkpoint_id", { preHandler: requireThread, schema: doc("threads", "Thread state at a checkpoint") }, async (request) => {
    return readThreadStateAt(persistence.checkpointer, request.params.thread_id, request.params.checkpoint_id);
  });

  app.post<ThreadParams>("/threads/:thread_id/state/checkpoint", { preHandler: requireThread, schema: doc("threads", "Thread state at a checkpoint (body {checkpoint: {checkpoint_id}})", { body: CheckpointQuerySchema }) }, async (request) => {
    const body = validInput(CheckpointQuerySchema, request.body);
    if (body.checkpoint.thread_id && body.checkpoint.thread_id !== request.params.thread_id) throw new BadRequestError("checkpoint thread_id does not match the thread");
    return readThreadStateAt(persistence.checkpointer, request.params.thread_id, body.checkpoint.checkpoint_id);
  });

  app.post<ThreadParams>("/threads/:thread_id/state", { preHandler: requireThread, schema: doc("threads", "Update thread state values", { body: StateUpdateSchema }) }, async (request) => {
    return threadService.updateState(request.params.thread_id, validInput(StateUpdateSchema, request.body));
  });

  // An unknown thread (or another user's, answered the same) has no history: `[]`, as LangGraph and DeerFlow answer.
  app.post<ThreadParams>("/threads/:thread_id/history", { preHandler: loadThreadIfOwned, schema: doc("threads", "Checkpoint history, newest first", { body: HistorySchema }) }, async (request) => {
    const body = validInput(HistorySchema, request.body);
    if (!request.thread) return [];
    return threadService.history(request.params.thread_id, { limit: body.limit, before: body.before ?? undefined, metadata: body.metadata ?? undefined });
  });
}
