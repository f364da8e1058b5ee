// Upload routes (DeerFlow app/gateway/routers/uploads.py): files for a thread's /mnt/user-data/uploads.
import { fastifyMultipart } from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BadRequestError, PayloadTooLargeError, DeerflowError } from "../src/errors.js";
import { requireThread, threadOf } from "./guards.js";
import { deleteUpload, listUploads, UploadBatch } from "../src/sandbox/uploads.js";
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
 * multipart (any field name), limited by config `uploads` (413), names sanitized (422), written atomically; 404
 * for an unknown thread. Register under `/api`.
 */
export async function uploadRoutes(app: FastifyInstance): Promise<void> {
  const { sandbox: provider, getAppConfig } = app.deerflow;
  // Scoped to this plugin: only the upload route parses multipart. preservePath keeps the client's file name
  // intact so that traversal attempts are refused rather than silently reduced to a base name.
  await app.register(fastifyMultipart, { preservePath: true, throwFileSizeLimit: true });

  /** The sandbox of the guarded route's thread, under its owner's directory. */
  const threadSandbox = (request: FastifyRequest) => {
    const thread = threadOf(request);
    return provider.sandboxFor(thread.thread_id, thread.owner_id);
  };

  app.post<ThreadParams>("/threads/:thread_id/uploads", { preHandler: requireThread, schema: doc("uploads", "Upload files (multipart) to the thread's /mnt/user-data/uploads") }, async (request, reply) => {
    const sandbox = threadSandbox(request);
    if (!request.isMultipart()) throw new BadRequestError("Expected a multipart/form-data body with one or more files");
    const limits = getAppConfig().uploads;
    const batch = new UploadBatch(sandbox, limits);
    try {
      // Busboy's own limits sit one above ours, so our checks (with clearer messages) fire first.
      const parts = request.parts({
        limits: { files: limits.max_files + 1, fileSize: limits.max_file_size + 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: limits.max_files + MAX_FIELDS + 1 },
      });
      for await (const part of parts) {
        if (part.type === "file") await batch.add(part.filename, part.file);
      }
      if (batch.count === 0) throw new BadRequestError("No files provided");
      const files = await batch.commit();
      return reply.send({ success: true, files, message: `Successfully uploaded ${files.length} file(s)`, skipped_files: [] });
    } catch (err) {
      await batch.abort();
      throw limitError(err, limits);
    }
  });

  app.get<ThreadParams>("/threads/:thread_id/uploads", { preHandler: requireThread, schema: doc("uploads", "List the thread's uploaded files") }, async (request) => {
    const files = await listUploads(threadSandbox(request));
    return { files, count: files.length };
  });

  app.delete<FileParams>("/threads/:thread_id/uploads/:filename", { preHandler: requireThread, schema: doc("uploads", "Delete one uploaded file") }, async (request) => {
    await deleteUpload(threadSandbox(request), request.params.filename);
    return { success: true, message: `Deleted ${request.params.filename}` };
  });
}
