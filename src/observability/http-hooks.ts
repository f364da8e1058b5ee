// Request ids echoed on every response and HTTP metrics by route pattern.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { FastifyInstance } from "fastify";
import type { GatewayMetrics } from "./metrics.js";
import type { GatewayTracing } from "./tracing.js";
import { REQUEST_ID_HEADER } from "./request-id.js";

/** Route label of a request that matched no route (404s of unknown paths): never the raw URL. */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * Installs the hooks: `onRequest` sets `x-request-id: <request.id>` on the reply (so it is on every response, SSE
 * and errors included, as the headers are written later); `onResponse` counts the response in
 * `deerflow_http_requests_total` and times it, labelled by the route pattern (`/threads/:thread_id`), so
 * cardinality stays bounded whatever URLs clients send. With `tracing`, each request also gets a SERVER span
 * `<METHOD> <route>` (`http.request.method`, `http.route`, `http.response.status_code`), the parent of the runs it
 * starts.
 */
export function installHttpObservability(app: FastifyInstance, metrics: GatewayMetrics, tracing?: GatewayTracing): void {
  app.addHook("onRequest", async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    if (!tracing) return;
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const span = tracing.tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": request.method, "http.route": route, "deerflow.request_id": request.id },
    });
    tracing.setRequestSpan(request.id, span);
  });
  const endSpan = (requestId: string, status?: number) => {
    const span = tracing?.requestSpan(requestId);
    if (!span || !tracing) return;
    tracing.setRequestSpan(requestId, undefined);
    if (status !== undefined) span.setAttribute("http.response.status_code", status);
    if (status === undefined || status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: status === undefined ? "client aborted" : `HTTP ${status}` });
    span.end();
  };
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const method = request.method;
    metrics.httpRequests.inc({ method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method, route }, reply.elapsedTime / 1000);
    endSpan(request.id, reply.statusCode);
  });
  app.addHook("onRequestAbort", async (request) => endSpan(request.id));
}
