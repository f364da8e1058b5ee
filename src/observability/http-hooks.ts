// Request ids echoed on every response and HTTP metrics by route pattern.
import type { FastifyInstance } from "fastify";
import type { GatewayMetrics } from "./metrics.js";
import { REQUEST_ID_HEADER } from "./request-id.js";

/** Route label of a request that matched no route (404s of unknown paths): never the raw URL. */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * Installs the hooks: `onRequest` sets `x-request-id: <request.id>` on the reply (so it is on every response, SSE
 * and errors included, as the headers are written later); `onResponse` counts the response in
 * `deerflow_http_requests_total` and times it, labelled by the route pattern (`/threads/:thread_id`), so
 * cardinality stays bounded whatever URLs clients send.
 */
export function installHttpObservability(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.addHook("onRequest", async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const method = request.method;
    metrics.httpRequests.inc({ method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method, route }, reply.elapsedTime / 1000);
  });
}
