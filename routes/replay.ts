// Regenerate / edit-and-rerun prepare and thread branches (DeerFlow thread_runs.py, threads.py `branches`).
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { principalOf } from "../src/auth/principal.js";
import { ensureInitialCheckpoint } from "../src/runtime/threads/rollback.js";
import { branchThread, prepareEditRegenerate, prepareRegenerate } from "../src/runtime/webapp/replay.js";
import { doc, validInput } from "./openapi.js";
import { ownedThread } from "./thread-access.js";

const RegenerateBody = z.looseObject({ message_id: z.string().min(1) });
const EditBody = z.looseObject({ human_message_id: z.string().min(1), replacement_text: z.string().min(1).max(100_000) });
const BranchBody = z.looseObject({ message_id: z.string().min(1), message_ids: z.array(z.string().min(1)).max(200).default([]), title: z.string().max(256).nullish() });

type ThreadParams = { Params: { thread_id: string } };

/**
 * Registers under `/api`: `POST /threads/:id/runs/regenerate/prepare` (`{message_id}`), `POST
 * /threads/:id/runs/edit-regenerate/prepare` (`{human_message_id, replacement_text}`), and `POST
 * /threads/:id/branches` (`{message_id, message_ids?, title?}`: a new thread owned by the caller from the end of
 * that turn, its user data copied when the turn is the latest). Another user's thread is 404.
 */
export async function replayRoutes(app: FastifyInstance): Promise<void> {
  const { persistence, sandbox } = app.deerflow;
  const runsOf = (threadId: string) => persistence.runs.list(threadId, { limit: 10_000 });

  app.post<ThreadParams>("/threads/:thread_id/runs/regenerate/prepare", { schema: doc("runs", "Prepare regenerating the latest assistant message", { body: RegenerateBody }) }, async (request) => {
    const threadId = request.params.thread_id;
    await ownedThread(app, request, threadId);
    const body = validInput(RegenerateBody, request.body);
    return prepareRegenerate(persistence.checkpointer, threadId, await runsOf(threadId), body.message_id);
  });

  app.post<ThreadParams>("/threads/:thread_id/runs/edit-regenerate/prepare", { schema: doc("runs", "Prepare editing and rerunning the latest user turn", { body: EditBody }) }, async (request) => {
    const threadId = request.params.thread_id;
    await ownedThread(app, request, threadId);
    const body = validInput(EditBody, request.body);
    return prepareEditRegenerate(persistence.checkpointer, threadId, await runsOf(threadId), body.human_message_id, body.replacement_text);
  });

  app.post<ThreadParams>("/threads/:thread_id/branches", { schema: doc("threads", "Branch a new thread from a completed assistant turn", { body: BranchBody }) }, async (request) => {
    const threadId = request.params.thread_id;
    const source = await ownedThread(app, request, threadId);
    const body = validInput(BranchBody, request.body);
    const userId = principalOf(request).id;
    const newThreadId = randomUUID();
    const result = await branchThread(persistence.checkpointer, threadId, newThreadId, body.message_id, new Set([body.message_id, ...body.message_ids]), {
      title: body.title,
      sourceDir: sandbox.dirsFor(threadId, userId).root,
      targetDir: sandbox.dirsFor(newThreadId, userId).root,
    });
    const { is_branch, ...rest } = result.metadata;
    // Owned by the caller; carries the caller-visible metadata of the source (assistant/agent), then the branch markers.
    await persistence.threads.create(newThreadId, { ...source.metadata, ...rest, is_branch }, userId);
    await ensureInitialCheckpoint(persistence.checkpointer, newThreadId);
    const { metadata: _metadata, ...answer } = result;
    return answer;
  });
}
