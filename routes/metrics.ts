// GET /metrics: Prometheus text exposition of the app's metrics (src/observability/metrics.ts).
import type { FastifyInstance } from "fastify";
import { principalOf } from "../src/auth/principal.js";
import { ForbiddenError } from "../src/errors.js";
import { doc } from "./openapi.js";

/**
 * `GET /metrics` -> the registry's metrics in the Prometheus text format (`text/plain; version=0.0.4`). Admins
 * only (an admin's API key for the scraper): the counts describe every user's traffic.
 * @throws ForbiddenError (403) for a signed-in user without the admin role.
 */
export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  app.get("/metrics", { schema: doc("health", "Prometheus metrics (text exposition format)", { response: { 200: { content: { "text/plain": { schema: { type: "string" } } } } } }) }, async (request, reply) => {
    if (principalOf(request).role !== "admin") throw new ForbiddenError("Admin privileges are required to read metrics");
    const { registry, service } = app.metrics;
    reply.type(registry.contentType);
    return service ? service() : registry.metrics();
  });
}
