// Upload routes (DeerFlow app/gateway/routers/uploads.py): files for a thread's /mnt/user-data/uploads.
import { fastifyMultipart } from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { principalOf } from "../src/auth/principal.js";
import { BadRequestError, NotFoundError, PayloadTooLargeError, DeerflowError } from "../src/errors.js";
import { assertThreadId } from "../src/runtime/runs/run-service.js";
import { requireThread, threadOf } from "./guards.js";
import { convertUploads, deleteUpload, listUploads, placeUploadsInSandbox, UploadBatch } from "../src/sandbox/uploads.js";
import { claimPendingThread, pendingThreadOwner } from "../src/runtime/webapp/pending-threads.js";
import { doc } from "./openapi.js";

type ThreadParams = { Params: { thread_id: string } };
type FileParams = { Params: { thread_id: string; filename: string } };

/** Multipart parts other than files a request may carry (form fields), and their size in bytes. */
const MAX_FIELDS = 20;
const MAX_FIELD_BYTES = 64 * 1024;

/** Maps @fastify/multipart limit errors to the gateway's 413 with a message naming the limit. */
function limitError(err: unknown, limits: { max_files: number; max_file_size: number }): unknown {
  const code = (err as { code?: string })?.code;
  if (code === "FST_FILES_LIMIT" || code === "FST_PARTS_LIMIT") return new PayloadTooLargeError(`Too many files: maximum is ${limits.max_files}`);
  if (code === "FST_REQ_FILE_TOO_LARGE") return new PayloadTooLargeError(`File too large (limit ${limits.max_file_size} bytes)`);
  if (code === "FST_FIELDS_LIMIT") return new PayloadTooLargeError(`Too many form fields: maximum is ${MAX_FIELDS}`);
  // Anything the multipart parser itself rejects (no boundary, truncated body, garbage) is the client's error.
  if (!DeerflowError.isInstance(err) && err instanceof Error && !(err as NodeJS.ErrnoException).syscall) {
    return new BadRequestError(`Malformed multipart body: ${err.message}`);
  }
  return err;
}

/**
 * `POST|GET /api/threads/:thread_id/uploads`, `DELETE /api/threads/:thread_id/uploads/:filename`. Uploads are
 * multipart (any field name), limited by config `uploads` (413), names sanitized (422), written atomically.
 * The web app uploads a new chat's files before the thread exists: the first upload claims the thread id for the
 * caller and creates its directories; the thread record follows with its first run. Also `GET .../uploads/list`
 * and `GET .../uploads/limits`, which answer for another user's thread (or claim) exactly as for a missing one (an
 * empty list); uploading to it or deleting from it is 404. `GET .../uploads` keeps the guard (404). Register under
 * `/api`.
 */
export async function uploadRoutes(app: FastifyInstance): Promise<void> {
  const { persistence, sandbox: provider, getAppConfig } = app.deerflow;
  // Scoped to this plugin: only the upload route parses multipart. preservePath keeps the client's file name
  // intact so that traversal attempts are refused rather than silently reduced to a base name.
  await app.register(fastifyMultipart, { preservePath: true, throwFileSizeLimit: true });

  const home = provider.baseDir;
  /**
   * The caller's sandbox of `threadId`. An existing thread must be the caller's; a thread that does not exist yet
   * is claimed by its first uploader (`claim`), or must already be claimed by the caller (404 otherwise).
   * @returns null when the thread neither exists nor was claimed and `claim` is false.
   */
  const threadSandbox = async (request: FastifyRequest, threadId: string, claim: boolean) => {
    assertThreadId(threadId);
    const userId = principalOf(request).id;
    const thread = await persistence.threads.get(threadId);
    if (thread) {
      if (thread.owner_id !== userId) throw new NotFoundError(`Thread ${threadId} not found`);
    } else {
      const claimedBy = pendingThreadOwner(home, threadId);
      if (claimedBy !== null && claimedBy !== userId) throw new NotFoundError(`Thread ${threadId} not found`);
      if (claimedBy === null) {
        if (!claim) return null;
        if (!claimPendingThread(home, threadId, userId)) throw new NotFoundError(`Thread ${threadId} not found`);
      }
    }
    return provider.sandboxFor(threadId, userId);
  };

  app.post<ThreadParams>("/threads/:thread_id/uploads", { schema: doc("uploads", "Upload files (multipart) to the thread's /mnt/user-data/uploads") }, async (request, reply) => {
    if (!request.isMultipart()) throw new BadRequestError("Expected a multipart/form-data body with one or more files");
    const limits = getAppConfig().uploads;
    // The multipart reader is attached before the (async) thread lookup, so the body is consumed from its start.
    // Busboy's own limits sit one above ours, so our checks (with clearer messages) fire first.
    const parts = request.parts({
      limits: { files: limits.max_files + 1, fileSize: limits.max_file_size + 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: limits.max_files + MAX_FIELDS + 1 },
    });
    const sandbox = (await threadSandbox(request, request.params.thread_id, true))!;
    const batch = new UploadBatch(sandbox, limits);
    try {
      for await (const part of parts) {
        if (part.type === "file") await batch.add(part.filename, part.file);
      }
      if (batch.count === 0) throw new BadRequestError("No files provided");
      const committed = await batch.commit();
      // Conversion never fails the upload: a file it cannot convert carries `conversion_error` instead.
      const files = getAppConfig().uploads.auto_convert_documents ? await convertUploads(sandbox, committed) : committed;
      await placeUploadsInSandbox(provider, request.params.thread_id, principalOf(request).id, files);
      return reply.send({ success: true, files, message: `Successfully uploaded ${files.length} file(s)`, skipped_files: [] });
    } catch (err) {
      await batch.abort();
      throw limitError(err, limits);
    }
  });

  /**
   * The caller's sandbox for a read that the web app also makes for a chat that does not exist yet: another user's
   * thread or claim reads exactly like a missing thread (null), so these routes reveal nothing about other users.
   */
  const readableSandbox = async (request: FastifyRequest, threadId: string) => {
    try {
      return await threadSandbox(request, threadId, false);
    } catch (err) {
      if (err instanceof NotFoundError) return null;
      throw err;
    }
  };

  app.get<ThreadParams>("/threads/:thread_id/uploads", { preHandler: requireThread, schema: doc("uploads", "List the thread's uploaded files (404 for a missing thread)") }, async (request) => {
    const thread = threadOf(request);
    const files = await listUploads(provider.sandboxFor(thread.thread_id, thread.owner_id));
    return { files, count: files.length };
  });

  app.get<ThreadParams>("/threads/:thread_id/uploads/list", { schema: doc("uploads", "List the thread's uploaded files (empty for a chat that does not exist yet)") }, async (request) => {
    const sandbox = await readableSandbox(request, request.params.thread_id);
    const files = sandbox ? await listUploads(sandbox) : [];
    return { files, count: files.length };
  });

  app.get<ThreadParams>("/threads/:thread_id/uploads/limits", { schema: doc("uploads", "Upload limits (files per request, bytes per file, bytes per request)") }, async (request) => {
    await readableSandbox(request, request.params.thread_id);
    const { max_files, max_file_size, max_total_size } = getAppConfig().uploads;
    return { max_files, max_file_size, max_total_size };
  });

  app.delete<FileParams>("/threads/:thread_id/uploads/:filename", { schema: doc("uploads", "Delete one uploaded file") }, async (request) => {
    const sandbox = await threadSandbox(request, request.params.thread_id, false);
    if (!sandbox) throw new NotFoundError(`Thread ${request.params.thread_id} not found`);
    await deleteUpload(sandbox, request.params.filename);
    return { success: true, message: `Deleted ${request.params.filename}` };
  });
}
