// Run routes (LangGraph API): streamed runs on a thread or stateless, and run lookup.
import type { FastifyInstance, FastifyReply } from "fastify";
import { NotFoundError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/run-service.js";
import { streamRunEvents } from "./sse.js";

/** Registers the run routes under the given prefix (`""` or `/api`). */
export async function runRoutes(app: FastifyInstance, opts: { prefix?: string }): Promise<void> {
  const { runService, runs, bridge } = app.deerflow;
  const base = opts.prefix ?? "";

  /** Starts the run (all validation before the first byte), then streams it. */
  async function stream(threadId: string | null, body: unknown, reply: FastifyReply): Promise<void> {
    const { run } = await runService.start(threadId, body);
    const { thread_id: tid, run_id: rid } = run.record;
    reply.header("Content-Location", `${base}/threads/${tid}/runs/${rid}`);
    await streamRunEvents(reply, bridge, run, { cancelOnDisconnect: run.onDisconnect === "cancel" });
  }

  app.post<{ Params: { thread_id: string } }>("/threads/:thread_id/runs/stream", { sse: "manual" }, async (request, reply) => {
    await stream(request.params.thread_id, request.body, reply);
  });

  app.post("/runs/stream", { sse: "manual" }, async (request, reply) => {
    await stream(null, request.body, reply);
  });

  app.get<{ Params: { thread_id: string } }>("/threads/:thread_id/runs", async (request) => {
    assertThreadId(request.params.thread_id);
    return runs.list(request.params.thread_id);
  });

  app.get<{ Params: { thread_id: string; run_id: string } }>("/threads/:thread_id/runs/:run_id", async (request) => {
    const { thread_id: threadId, run_id: runId } = request.params;
    assertThreadId(threadId);
    const run = runs.get(runId, threadId);
    if (!run) throw new NotFoundError(`Run ${runId} not found`);
    return run.record;
  });
}
