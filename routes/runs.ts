// Run routes (LangGraph API): create / stream / wait on a thread or stateless, list, get, cancel, join, join-stream.
// Every creating route goes through RunService.start (one run-creation path).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { ConflictError, NotFoundError } from "../src/errors.js";
import { isTerminal, type ActiveRun, type RunStatus } from "../src/runtime/runs/run-manager.js";
import { RunCreateSchema, type RunCreate } from "../src/runtime/runs/run-request.js";
import { principalOf } from "../src/auth/principal.js";
import { CancelActionSchema, RunStatusSchema } from "../src/runtime/wire/wire-enums.js";
import { requireThread } from "./guards.js";
import { doc, validInput } from "./openapi.js";
import { streamRunEvents } from "./sse.js";

const boolish = z.union([z.boolean(), z.enum(["0", "1", "true", "false"])]).transform((v) => v === true || v === "1" || v === "true");
const CancelQuerySchema = z.looseObject({ wait: boolish.default(false), action: CancelActionSchema.default("interrupt") });
const ListQuerySchema = z.looseObject({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  status: RunStatusSchema.optional(),
});
const JoinQuerySchema = z.looseObject({ cancel_on_disconnect: boolish.default(false) });
/** `POST .../runs/{run_id}/stream`: cancels first only when `action` is given. */
const CancelStreamQuerySchema = z.looseObject({ wait: boolish.default(false), action: CancelActionSchema.optional(), cancel_on_disconnect: boolish.default(false) });

type ThreadParams = { Params: { thread_id: string } };
type RunParams = { Params: { thread_id: string; run_id: string } };

/** Registers the run routes under the given prefix (`""` or `/api`). */
export async function runRoutes(app: FastifyInstance, opts: { prefix?: string }): Promise<void> {
  const { runService, runs, bridge } = app.deerflow;
  const base = opts.prefix ?? "";
  const location = (run: ActiveRun) => `${base}/threads/${run.record.thread_id}/runs/${run.record.run_id}`;

  /** Cancels `run` when the client goes away before it finished and the policy says so. */
  const cancelOnClientGone = (request: FastifyRequest, run: ActiveRun, enabled: boolean) => {
    const onClose = () => {
      if (enabled && !run.finished) void runs.cancel(run.record.thread_id, run.record.run_id).catch(() => {});
    };
    request.raw.socket?.once("close", onClose);
    void run.done.then(() => request.raw.socket?.off("close", onClose));
  };

  /** The run of a guarded route's thread (the guard has checked the id and the caller's ownership). */
  const findRun = async (threadId: string, runId: string) => {
    const record = await runs.get(runId, threadId);
    if (!record) throw new NotFoundError(`Run ${runId} not found`);
    return record;
  };

  async function stream(threadId: string | null, body: RunCreate, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { run } = await runService.start(threadId, body, principalOf(request).id, { requestId: request.id, userRole: principalOf(request).role });
    reply.header("Content-Location", location(run));
    await streamRunEvents(reply, bridge, run, { cancelOnDisconnect: run.onDisconnect === "cancel" });
  }

  async function wait(threadId: string | null, body: RunCreate, request: FastifyRequest, reply: FastifyReply) {
    const { run } = await runService.start(threadId, body, principalOf(request).id, { requestId: request.id, userRole: principalOf(request).role });
    reply.header("Content-Location", location(run));
    cancelOnClientGone(request, run, run.onDisconnect === "cancel");
    return runService.result(run);
  }

  async function create(threadId: string | null, body: RunCreate, request: FastifyRequest, reply: FastifyReply) {
    const { run } = await runService.start(threadId, body, principalOf(request).id, { requestId: request.id, userRole: principalOf(request).role });
    reply.header("Content-Location", location(run));
    return run.record;
  }

  app.post<ThreadParams>("/threads/:thread_id/runs/stream", { sse: "manual", preHandler: requireThread, schema: doc("runs", "Run on a thread, streamed as SSE", { body: RunCreateSchema }) }, (req, reply) => stream(req.params.thread_id, validInput(RunCreateSchema, req.body), req, reply));
  app.post("/runs/stream", { sse: "manual", schema: doc("runs", "Stateless run (thread from config.configurable.thread_id or new), SSE", { body: RunCreateSchema }) }, (req, reply) => stream(null, validInput(RunCreateSchema, req.body), req, reply));
  app.post<ThreadParams>("/threads/:thread_id/runs/wait", { preHandler: requireThread, schema: doc("runs", "Run on a thread and wait for its final values", { body: RunCreateSchema }) }, (req, reply) => wait(req.params.thread_id, validInput(RunCreateSchema, req.body), req, reply));
  app.post("/runs/wait", { schema: doc("runs", "Stateless run, wait for its final values", { body: RunCreateSchema }) }, (req, reply) => wait(null, validInput(RunCreateSchema, req.body), req, reply));
  app.post<ThreadParams>("/threads/:thread_id/runs", { preHandler: requireThread, schema: doc("runs", "Create a background run", { body: RunCreateSchema }) }, (req, reply) => create(req.params.thread_id, validInput(RunCreateSchema, req.body), req, reply));
  app.post("/runs", { schema: doc("runs", "Create a stateless background run", { body: RunCreateSchema }) }, (req, reply) => create(null, validInput(RunCreateSchema, req.body), req, reply));

  app.get<ThreadParams>("/threads/:thread_id/runs", { preHandler: requireThread, schema: doc("runs", "List a thread's runs, newest first", { querystring: ListQuerySchema }) }, async (request) => {
    const query = validInput(ListQuerySchema, request.query, "query");
    return runs.list(request.params.thread_id, { limit: query.limit, offset: query.offset, status: query.status as RunStatus | undefined });
  });

  app.get<RunParams>("/threads/:thread_id/runs/:run_id", { preHandler: requireThread, schema: doc("runs", "Get a run") }, async (request) => await findRun(request.params.thread_id, request.params.run_id));

  app.delete<RunParams>("/threads/:thread_id/runs/:run_id", { preHandler: requireThread, schema: doc("runs", "Delete a finished run") }, async (request, reply) => {
    const record = await findRun(request.params.thread_id, request.params.run_id);
    if (!isTerminal(record.status) || runs.getActive(record.run_id)?.finished === false) {
      throw new ConflictError(`Run ${record.run_id} is still active; cancel it first`);
    }
    await runs.delete(record.run_id);
    return reply.code(204).send();
  });

  app.post<RunParams>("/threads/:thread_id/runs/:run_id/cancel", { preHandler: requireThread, schema: doc("runs", "Cancel a run (202, or 204 with wait)", { querystring: CancelQuerySchema }) }, async (request, reply) => {
    const { thread_id: threadId, run_id: runId } = request.params;
    const query = validInput(CancelQuerySchema, request.query, "query");
    await runs.cancel(threadId, runId, { action: query.action, wait: query.wait });
    return reply.code(query.wait ? 204 : 202).send();
  });

  app.get<RunParams>("/threads/:thread_id/runs/:run_id/join", { preHandler: requireThread, schema: doc("runs", "Wait for a run and get the final values", { querystring: JoinQuerySchema }) }, async (request) => {
    let record = await findRun(request.params.thread_id, request.params.run_id);
    const query = validInput(JoinQuerySchema, request.query, "query");
    const run = runs.getActive(record.run_id);
    if (run && !run.finished) {
      cancelOnClientGone(request, run, query.cancel_on_disconnect);
      return runService.result(run);
    }
    if (!isTerminal(record.status)) {
      // Running in another gateway process: wait for it there, then answer from the stored record.
      await runs.settled(record.run_id);
      record = (await runs.get(record.run_id)) ?? record;
    }
    return runService.resultOf(record);
  });

  /** Joins a run's event stream: replay from `Last-Event-ID` (everything retained for a malformed id), then live. */
  const joinStream = async (request: FastifyRequest<RunParams>, reply: FastifyReply, action?: "interrupt" | "rollback", waitFirst = false) => {
    const record = await findRun(request.params.thread_id, request.params.run_id);
    const query = validInput(JoinQuerySchema, request.query, "query");
    if (action) {
      await runs.cancel(record.thread_id, record.run_id, { action, wait: waitFirst });
      if (waitFirst) return reply.code(204).send();
    }
    const run = runs.getActive(record.run_id);
    const lastEventId = (request.headers["last-event-id"] as string | undefined) ?? null;
    await streamRunEvents(reply, bridge, run ?? { record, finished: true }, { lastEventId, cancelOnDisconnect: query.cancel_on_disconnect });
  };

  app.get<RunParams>("/threads/:thread_id/runs/:run_id/stream", { sse: "manual", preHandler: requireThread, schema: doc("runs", "Join a run's SSE stream (Last-Event-ID resumes)", { querystring: JoinQuerySchema }) }, (request, reply) => joinStream(request, reply));

  app.post<RunParams>("/threads/:thread_id/runs/:run_id/stream", { sse: "manual", preHandler: requireThread, schema: doc("runs", "Cancel a run, then stream what remains", { querystring: CancelStreamQuerySchema }) }, (request, reply) => {
    const query = validInput(CancelStreamQuerySchema, request.query, "query");
    return joinStream(request, reply, query.action, query.wait);
  });
}
