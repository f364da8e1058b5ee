// GET /health: liveness plus the config's health (a broken config edit reports `degraded`, never takes the service down).
import { basename } from "node:path";
import type { FastifyInstance } from "fastify";
import { getAppConfigStatus } from "../src/config/app-config.js";
import { doc } from "./openapi.js";

/**
 * `GET /health` -> 200 `{status: "healthy", service}`, or `{status: "degraded", config_error}` after a bad config
 * edit (the config file named by its base name, never its absolute path).
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get("/health", { schema: doc("health", "Liveness and config health") }, async () => {
    // Check the file now (signature check), so a broken edit shows up even before the next run.
    try {
      app.deerflow.getAppConfig();
    } catch {
      /* reported through the status below */
    }
    const { error, path } = getAppConfigStatus();
    if (!error) return { status: "healthy", service: "deer-flow-gateway" };
    // The file is named by its base name only: where the gateway's files live is not for anonymous callers.
    return { status: "degraded", service: "deer-flow-gateway", config_error: path ? error.split(path).join(basename(path)) : error };
  });
}
