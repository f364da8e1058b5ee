// GET /health: liveness plus the config's health (a broken config edit reports `degraded`, never takes the service down)
// and the models' (a `use:` that cannot be resolved, a fallback naming no model). GET /healthz and GET /readyz: the
// Kubernetes probes (docs/operations.md, "Health and readiness"): the process is alive; the process can serve, its
// shared stores answering.
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

/** What `GET /readyz` answers. */
export const ReadySchema = z.object({
  status: z.enum(["ready", "not_ready"]),
  checks: z
    .object({
      database: z.enum(["up", "down"]).optional().describe("PostgreSQL (`database.backend: postgres`); absent for the local SQLite file"),
      redis: z.enum(["up", "down"]).optional().describe("The stream bridge's Redis (`stream_bridge.type: redis`); absent for the in-memory bridge"),
    })
    .describe("Each shared store and whether it answered within the probe timeout"),
  detail: z.string().optional().describe("Why the process is not ready, naming the stores that are down (never a host or credential)"),
});

/** How long a readiness probe waits for a store's answer, in ms (a hung store counts as down). */
export const READY_PROBE_TIMEOUT_MS = 2_000;

/** Resolves true when `ping` answers within `timeoutMs`, false when it rejects or takes longer. */
async function answers(ping: () => Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  try {
    return await Promise.race([ping().then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Registers `GET /healthz` -> 200 `{status: "ok"}` (liveness); `GET /readyz` -> 200 `{status: "ready", checks}` or,
 * when a shared store does not answer within {@link READY_PROBE_TIMEOUT_MS}, 503 `{status: "not_ready", checks:
 * {database: "down"}, detail: "PostgreSQL unavailable"}` with `retry-after: 1` (readiness: a load balancer routes
 * around the process until its stores are back); and `GET /health` -> 200 `{status: "healthy", service}`; `{status: "reloading"}` while a config.yaml edit waits out
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

  // Liveness: the process answers. A store outage never fails it (restarting the process would not bring PostgreSQL
  // back); while shutting down the server's own hook answers 503 first.
  app.get("/healthz", { schema: doc("health", "Liveness probe: the process answers", { response: { 200: z.object({ status: z.literal("ok") }) } }) }, async () => ({ status: "ok" as const }));

  app.get("/readyz", { schema: doc("health", "Readiness probe: the shared stores answer", { response: { 200: ReadySchema, 503: ReadySchema } }) }, async (_request, reply) => {
    const { persistence, pingRedis } = app.deerflow;
    const probes: [name: "database" | "redis", ping: () => Promise<void>][] = [];
    if (persistence.ping) probes.push(["database", () => persistence.ping!()]);
    if (pingRedis) probes.push(["redis", pingRedis]);
    const results = await Promise.all(probes.map(async ([name, ping]) => [name, (await answers(ping, READY_PROBE_TIMEOUT_MS)) ? "up" : "down"] as const));
    const checks = Object.fromEntries(results) as z.infer<typeof ReadySchema>["checks"];
    const down = results.filter(([, state]) => state === "down").map(([name]) => (name === "database" ? "PostgreSQL" : "Redis"));
    if (!down.length) return { status: "ready" as const, checks };
    return reply.code(503).header("retry-after", "1").send({ status: "not_ready", checks, detail: `${down.join(" and ")} unavailable` });
  });
}
