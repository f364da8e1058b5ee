// GET /metrics: Prometheus text exposition of the app's metrics (src/observability/metrics.ts).
import type { FastifyInstance } from "fastify";
import { doc } from "./openapi.js";

/** `GET /metrics` -> the registry's metrics in the Prometheus text format (`text/plain; version=0.0.4`). */
export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  app.get("/metrics", { schema: doc("health", "Prometheus metrics (text exposition format)", { response: { 200: { content: { "text/plain": { schema: { type: "string" } } } } } }) }, async (_request, reply) => {
    const { registry } = app.metrics;
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
