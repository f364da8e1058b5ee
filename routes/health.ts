// GET /health: liveness plus the config's health (a broken config edit reports `degraded`, never takes the service down)
// and the models' (a `use:` that cannot be resolved, a fallback naming no model).
import { basename } from "node:path";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { getAppConfigStatus } from "../src/config/app-config.js";
import { checkModels } from "../src/runtime/model-health.js";
import { doc } from "./openapi.js";

/** What `GET /health` answers. */
export const HealthSchema = z.object({
  status: z.enum(["healthy", "reloading", "degraded"]),
  service: z.string(),
  config_error: z.string().optional().describe("Why the last config edit was not applied (the last good config is served)"),
  model_errors: z.array(z.object({ model: z.string(), error: z.string() })).optional().describe("Models whose `use:` cannot be resolved or whose fallbacks name no configured model"),
  sandbox: z.string().optional().describe("The active sandbox provider: `local`, `bubblewrap` or `aio_sandbox` (fixed at start)"),
  sandbox_process_limit: z.enum(["pids_cgroup", "rlimit", "none"]).optional().describe("bubblewrap only: what enforces sandbox.limits.processes (`none`: a root gateway without a writable pids cgroup)"),
});

type HealthBody = z.infer<typeof HealthSchema>;

/**
 * `GET /health` -> 200 `{status: "healthy", service}`; `{status: "reloading"}` while a config.yaml edit waits out
 * its stability period (the last good config serves); or `{status: "degraded", config_error?, model_errors?}`
 * after a bad config edit (the config file named by its base name, never its absolute path) or with a model that
 * cannot be built (`use: nosuchpkg:Nope`). Each answer names the active sandbox provider (`sandbox`) and, for
 * bubblewrap, what enforces its process limit (`sandbox_process_limit`).
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get("/health", { schema: doc("health", "Liveness, config and model health", { response: { 200: HealthSchema } }) }, async () => {
    // Check the file now (signature check), so a broken edit shows up even before the next run.
    let config = null;
    try {
      config = app.deerflow.getAppConfig();
    } catch {
      /* reported through the status below */
    }
    const { error, path, pending } = getAppConfigStatus();
    const modelErrors = config ? await checkModels(config) : [];
    // An edit still settling is `reloading` (200, the last good config serves): a routine edit never looks broken.
    const status = error || modelErrors.length ? "degraded" : pending ? "reloading" : "healthy";
    const body: HealthBody = { status, service: "deer-flow-gateway", sandbox: app.deerflow.sandbox.kind };
    // Only the bubblewrap provider has one (routes do not import the sandbox layer's classes).
    const processLimit = (app.deerflow.sandbox as { processLimit?: HealthBody["sandbox_process_limit"] }).processLimit;
    if (processLimit) body.sandbox_process_limit = processLimit;
    // The file is named by its base name only: where the gateway's files live is not for anonymous callers.
    if (error) body.config_error = path ? error.split(path).join(basename(path)) : error;
    if (modelErrors.length) body.model_errors = modelErrors;
    return body;
  });
}
