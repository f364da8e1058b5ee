// Artifact routes (DeerFlow app/gateway/routers/artifacts.py): files of a thread's own /mnt/user-data.
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { ConflictError } from "../src/errors.js";
import { fetchThreadArtifact, openArtifact, type FetchedArtifact } from "../src/sandbox/artifacts.js";
import { artifactEtag, etagMatches, parseRange, saveArtifact } from "../src/runtime/webapp/artifact-files.js";
import { doc, validInput } from "./openapi.js";
import { requireThread, threadOf } from "./guards.js";

const QuerySchema = z.looseObject({ download: z.enum(["true", "false", "1", "0"]).optional() });
const UpdateSchema = z.looseObject({ content: z.string(), expected_sha256: z.string().regex(/^[0-9a-f]{64}$/) });
type ArtifactRequest = { Params: { thread_id: string; "*": string }; Querystring: { download?: string } };

/** GET of an artifact read back from DeerFlow's container sandbox: the local route's headers, ETag, 304 and Range. */
async function sendFetchedArtifact(request: FastifyRequest<ArtifactRequest>, reply: FastifyReply, artifact: FetchedArtifact) {
  const size = artifact.body.length;
  const etag = `"${createHash("sha256").update(artifact.body).digest("hex")}"`;
  const download = request.query.download === "true" || request.query.download === "1";
  reply
    .header("content-type", artifact.contentType)
    .header("content-disposition", `${artifact.active || download ? "attachment" : "inline"}; filename*=UTF-8''${encodeURIComponent(artifact.filename)}`)
    .header("x-content-type-options", "nosniff")
    .header("cache-control", "no-cache")
    .header("etag", etag)
    .header("accept-ranges", "bytes");
  if (etagMatches(request.headers["if-none-match"], etag)) return reply.code(304).send();
  const range = request.headers["if-range"] ? null : parseRange(request.headers.range, size);
  if (range === "unsatisfiable") return reply.code(416).header("content-range", `bytes */${size}`).send();
  if (range) return reply.code(206).header("content-range", `bytes ${range.start}-${range.end}/${size}`).send(artifact.body.subarray(range.start, range.end + 1));
  return reply.send(artifact.body);
}

/**
 * `GET /api/threads/:thread_id/artifacts/*`: streams a file of the thread's `user-data` directories, addressed as
 * `mnt/user-data/<area>/...`, `<area>/...` or a path relative to `outputs`, with its content type and
 * `X-Content-Type-Options: nosniff`. Only inert types (text, JSON, images, PDF, audio, video) are shown inline;
 * everything else (HTML, XML, SVG, scripts, unknown) is sent as an attachment; `?download=true` forces
 * one for anything. With DeerFlow's container sandbox the file is read back from the sandbox (502 when it fails). `ETag` (strong SHA-256 up to 32 MiB), `If-None-Match` (304), one `Range` (206, 416 with
 * `Content-Range: bytes * /<size>`; ignored with `If-Range`). Traversal (`..`, encoded separators, symlinks leading
 * outside) is 403, a missing file 404.
 * `PUT` the same path with `{content, expected_sha256}`: replaces a UTF-8 text file under outputs atomically;
 * 412 when its SHA-256 differs (changed since opened), 409 while a run of the thread is in flight.
 * Register under `/api`.
 */
export async function artifactRoutes(app: FastifyInstance): Promise<void> {
  const { sandbox: provider, runs } = app.deerflow;

  app.get<ArtifactRequest>("/threads/:thread_id/artifacts/*", { preHandler: requireThread, schema: doc("artifacts", "Download a file from the thread's /mnt/user-data", { querystring: QuerySchema }) }, async (request, reply) => {
    const thread = threadOf(request);
    const fetched = await fetchThreadArtifact(provider, thread.thread_id, thread.owner_id, request.params["*"]);
    if (fetched) return sendFetchedArtifact(request, reply, fetched);
    const artifact = await openArtifact(provider.sandboxFor(thread.thread_id, thread.owner_id), request.params["*"]);
    const info = await artifact.handle.stat();
    let etag: string;
    try {
      etag = await artifactEtag(`/proc/self/fd/${artifact.handle.fd}`, artifact.size, info.mtimeMs);
    } catch {
      etag = `W/"${artifact.size}-${Math.floor(info.mtimeMs)}"`;
    }
    const download = request.query.download === "true" || request.query.download === "1";
    const disposition = artifact.active || download ? "attachment" : "inline";
    reply
      .header("content-type", artifact.contentType)
      .header("content-disposition", `${disposition}; filename*=UTF-8''${encodeURIComponent(artifact.filename)}`)
      .header("x-content-type-options", "nosniff")
      // Revalidate every time (the file may be edited), but let the browser keep it for a 304.
      .header("cache-control", "no-cache")
      .header("etag", etag)
      .header("accept-ranges", "bytes");
    if (etagMatches(request.headers["if-none-match"], etag)) {
      await artifact.handle.close();
      return reply.code(304).send();
    }
    const range = request.headers["if-range"] ? null : parseRange(request.headers.range, artifact.size);
    if (range === "unsatisfiable") {
      await artifact.handle.close();
      return reply.code(416).header("content-range", `bytes */${artifact.size}`).send();
    }
    if (range) {
      return reply
        .code(206)
        .header("content-range", `bytes ${range.start}-${range.end}/${artifact.size}`)
        .header("content-length", String(range.end - range.start + 1))
        .send(artifact.handle.createReadStream({ start: range.start, end: range.end, autoClose: true }));
    }
    return reply.header("content-length", String(artifact.size)).send(artifact.handle.createReadStream({ autoClose: true }));
  });

  app.put<ArtifactRequest>("/threads/:thread_id/artifacts/*", { preHandler: requireThread, schema: doc("artifacts", "Save an edited text artifact under outputs (expected_sha256 precondition)", { body: UpdateSchema }) }, async (request) => {
    const thread = threadOf(request);
    const body = validInput(UpdateSchema, request.body);
    if (await runs.hasInFlight(thread.thread_id)) throw new ConflictError("Thread has a run in flight. Save after the run finishes.");
    return saveArtifact(provider.sandboxFor(thread.thread_id, thread.owner_id), request.params["*"], body.content, body.expected_sha256);
  });
}
