// Artifact route (DeerFlow app/gateway/routers/artifacts.py): files of a thread's own /mnt/user-data.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireThread, threadOf } from "./guards.js";
import { openArtifact } from "../src/sandbox/artifacts.js";
import { doc } from "./openapi.js";

const QuerySchema = z.looseObject({ download: z.enum(["true", "false", "1", "0"]).optional() });
type ArtifactRequest = { Params: { thread_id: string; "*": string }; Querystring: { download?: string } };

/**
 * `GET /api/threads/:thread_id/artifacts/*`: streams a file of the thread's `user-data` directories, addressed as
 * `mnt/user-data/<area>/...`, `<area>/...` or a path relative to `outputs`, with its content type and
 * `X-Content-Type-Options: nosniff`. Only inert types (text, JSON, images, PDF, audio, video) are shown inline;
 * everything else (HTML, XML, SVG, scripts, unknown) is sent as an attachment; `?download=true` forces
 * one for anything. Traversal (`..`, encoded separators, symlinks leading outside) is 403, a missing file 404.
 * Register under `/api`.
 */
export async function artifactRoutes(app: FastifyInstance): Promise<void> {
  const { sandbox: provider } = app.deerflow;

  app.get<ArtifactRequest>("/threads/:thread_id/artifacts/*", { preHandler: requireThread, schema: doc("artifacts", "Download a file from the thread's /mnt/user-data", { querystring: QuerySchema }) }, async (request, reply) => {
    const thread = threadOf(request);
    const artifact = await openArtifact(provider.sandboxFor(thread.thread_id, thread.owner_id), request.params["*"]);
    const download = request.query.download === "true" || request.query.download === "1";
    const disposition = artifact.active || download ? "attachment" : "inline";
    return reply
      .header("content-type", artifact.contentType)
      .header("content-length", String(artifact.size))
      .header("content-disposition", `${disposition}; filename*=UTF-8''${encodeURIComponent(artifact.filename)}`)
      .header("x-content-type-options", "nosniff")
      .header("cache-control", "no-store")
      .send(artifact.handle.createReadStream({ autoClose: true }));
  });
}
