// buildApp: the Fastify instance with its plugins, services and routes. It never listens (src/server.ts does).
import path from "node:path";
import { fastifyCors } from "@fastify/cors";
import { fastifySSE } from "@fastify/sse";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { registerRoutes } from "../routes/index.js";
import { sseSerializer } from "../routes/sse.js";
import { capDetail, installErrorHandlers } from "../routes/errors.js";
import { registerOpenApi } from "../routes/openapi.js";
import { checkGuardProviders } from "./agents/lead-agent/guards.js";
import { buildMemoryManager } from "./agents/memory/build-manager.js";
import type { MemoryManager } from "./agents/memory/manager.js";
import type { DeerMemManager } from "./agents/memory/deermem-manager.js";
import { closeMcpClients } from "./tools/mcp-tools.js";
import { openMcpTasks, runLauncher } from "./runtime/mcp-tasks/open-mcp-tasks.js";
import type { McpTaskService } from "./runtime/mcp-tasks/task-service.js";
import { AgentStore } from "./config/agent-store.js";
import { getAppConfig, onAppConfigReload, withPinnedAppConfig } from "./config/app-config.js";
import { getAgentsDir, getProjectRoot, getRuntimeHome, getSkillsRoot } from "./config/paths.js";
import { DEFAULT_CORS_ORIGINS } from "./config/server-env.js";
import type { AppConfig } from "./config/schema.js";
import { getLogger } from "./logger.js";
import { createAuthRuntime } from "./auth/create-auth.js";
import { installAuth } from "./auth/auth-plugin.js";
import { resolveAgentFactory, type AgentFactory } from "./runtime/runs/agent-factory.js";
import { databaseUrl, openPersistence, type Persistence } from "./runtime/persistence/persistence.js";
import { SchedulerService } from "./runtime/scheduler/scheduler-service.js";
import { launchWith } from "./runtime/scheduler/launch.js";
import type { RunManager } from "./runtime/runs/run-manager.js";
import type { DistributedRunManager } from "./runtime/runs/distributed-run-manager.js";
import { RunService } from "./runtime/runs/run-service.js";
import { ThreadService } from "./runtime/threads/thread-service.js";
import { openRunCoordination, resolveStreamBridgeSection, streamBridgeUrl } from "./runtime/stream/scale-out.js";
import type { StreamBridge } from "./runtime/stream/stream-bridge.js";
import { RecordingStreamBridge, RunEventLog } from "./runtime/stream/run-event-log.js";
import { SqliteRunEventStore } from "./runtime/persistence/sqlite/run-event-store.js";
import Database from "better-sqlite3";
import type { GatewaySandboxProvider } from "./sandbox/security.js";
import { flushTracing } from "./agents/lead-agent/tracing.js";
import { createSandboxProvider } from "./sandbox/security.js";
import { assertSandboxUseOffered } from "./sandbox/provider-choice.js";
import { DEFAULT_SERVER_TIMEOUTS, installBodyLimits, type ServerTimeouts } from "./http/body-limits.js";
import { parseClientJson } from "./http/json-limits.js";
import { corsOriginAllowed, DEFAULT_ALLOWED_HOSTS, installRequestGuards } from "./http/origins.js";
import { sweepLeftovers } from "./config/leftovers.js";
import { clientErrorHandler } from "./http/client-errors.js";
import { installHttpObservability } from "./observability/http-hooks.js";
import { createGatewayMetrics, type GatewayMetrics } from "./observability/metrics.js";
import { genRequestId } from "./observability/request-id.js";
import { createRunObserver } from "./observability/run-observer.js";
import type { GatewayTracing } from "./observability/tracing.js";
import { RunQuotas } from "./runtime/limits/run-quotas.js";
import { registerRateLimit } from "./runtime/limits/rate-limit.js";
import { startChannels, type ChannelService } from "./channels/start.js";
import { DEFAULT_USER_ID } from "./agents/run-context.js";

/** Options of {@link buildApp}; every field has a production default. */
export interface BuildAppOptions {
  /** Logger shared with Fastify (default: the process logger). */
  logger?: Logger;
  /** Runtime home for the checkpoint DB (default `DEER_FLOW_HOME` / `.deer-flow`). */
  home?: string;
  /** Graph factory (default `resolveAgentFactory()`, i.e. `makeLeadAgent`); tests inject scripted graphs. */
  agentFactory?: AgentFactory;
  /** Config accessor (default `getAppConfig`). */
  getAppConfig?: () => AppConfig;
  /** SSE heartbeat interval in ms (default 15000; 0 disables). */
  heartbeatMs?: number;
  /** How long finished runs stay replayable, in ms (default 60000). */
  cleanupDelayMs?: number;
  /** Events retained per run by the stream bridge (default `stream_bridge.queue_maxsize`, 256). */
  queueMaxSize?: number;
  /** Browser origins allowed by CORS (`*` = any); an origin matches with or without a port. Default localhost only. */
  corsOrigins?: string[];
  /**
   * Auth switch (default `DEER_FLOW_AUTH_DISABLED=1` from the environment): true runs every request without
   * credentials as the default user. Refused when the environment is production.
   */
  authDisabled?: boolean;
  /** Proxies whose `X-Forwarded-For` names the client (default `AUTH_TRUSTED_PROXIES`); IPs or CIDRs. */
  trustedProxies?: string[];
  /** Host names the gateway answers to besides IP literals (default loopback names; `*` = any). */
  allowedHosts?: string[];
  /** Header / whole-request receive timeouts (default {@link DEFAULT_SERVER_TIMEOUTS}). */
  timeouts?: Partial<ServerTimeouts>;
  /** Metrics of this app (default: a fresh registry with process metrics); served at `/metrics`. */
  metrics?: GatewayMetrics;
  /** An ioredis client for shared rate-limit counters (default: from `limits.rate_limit.redis_url`, if set). */
  rateLimitRedis?: unknown;
  /** OpenTelemetry tracing (src/observability/tracing.ts); off when absent. Flushed when the app closes. */
  tracing?: GatewayTracing;
  /** The memory backend (default: built from `memory.manager_class` at start-up). */
  memoryManager?: MemoryManager;
  /** The scheduled-task poller's clock and poll interval (tests); default the wall clock and `scheduler.poll_interval_seconds`. */
  scheduler?: { now?: () => Date; pollMs?: number };
}

export { corsOriginAllowed } from "./http/origins.js";

/** Services shared by the routes (a Fastify decorator, not module state). */
export interface GatewayServices {
  runService: RunService;
  threadService: ThreadService;
  agents: AgentStore;
  runs: RunManager;
  bridge: StreamBridge;
  persistence: Persistence;
  getAppConfig: () => AppConfig;
  /** Per-thread sandbox directories (uploads, artifacts and the sandbox tools share it). */
  sandbox: GatewaySandboxProvider;
  /** Stored events of every run (`GET .../runs/{run_id}/events`). */
  runEvents: RunEventLog;
  /** The memory backend (`memory.manager_class`); the memory routes read and write through it. */
  memoryManager: MemoryManager;
  /** Per-user run quotas (concurrent runs, daily tokens) and their counts (src/runtime/limits/run-quotas.ts). */
  quotas: RunQuotas;
  /** True when runs and their events are shared with other gateway processes (Redis bridge). */
  distributed: boolean;
  /** A round trip to the Redis of the stream bridge (Redis bridge only), for readiness (`GET /readyz`). */
  pingRedis?: () => Promise<void>;
  /** MCP background tasks (`mcp_tasks.enabled`), or null when off. */
  mcpTasks: McpTaskService | null;
  /** Scheduled tasks: the poller and the manual trigger (src/runtime/scheduler/). */
  scheduler: SchedulerService;
  /** The IM channel runtime (src/channels/), or null when config.yaml enables no channel. */
  channels: ChannelService | null;
  /** Aborted when the process starts shutting down: new requests get 503, SSE streams are cut (src/server.ts). */
  closing: AbortController;
}

declare module "fastify" {
  interface FastifyInstance {
    deerflow: GatewayServices;
    /** This app's Prometheus metrics (src/observability/metrics.ts). */
    metrics: GatewayMetrics;
  }
}

/** Hands the database's memory store to a DeerMem backend; a failed import closes persistence and stops the start. */
async function useSharedMemory(manager: MemoryManager, persistence: Persistence, logger: Logger): Promise<void> {
  const sharing = manager as Partial<Pick<DeerMemManager, "useSharedStore">>;
  if (!sharing.useSharedStore || !persistence.memory) return;
  try {
    const imported = await sharing.useSharedStore(persistence.memory);
    if (imported) logger.info({ imported }, "memory files of this home imported into PostgreSQL");
  } catch (err) {
    await persistence.close();
    throw new Error(`cannot move memory to PostgreSQL: ${(err as Error).message}`);
  }
}

/**
 * Builds the gateway: loads the config (so a broken file fails here, before listening), opens persistence
 * (restart-only), registers CORS (exposing `Content-Location`), SSE, the JSON parser that answers malformed JSON
 * with 422, the error handlers and the route table. Closing the app closes the bridge and the databases.
 * @throws ConfigError when the config cannot be loaded.
 */
export async function buildApp(options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const logger = options.logger ?? getLogger();
  const readConfig = options.getAppConfig ?? getAppConfig;
  const appConfig = readConfig();
  // A sandbox provider this gateway does not offer stops the start here, before anything is opened.
  assertSandboxUseOffered(appConfig.sandbox);
  const home = options.home ?? getRuntimeHome();
  const corsOrigins = options.corsOrigins ?? DEFAULT_CORS_ORIGINS;
  // An unresolvable memory backend stops the start here, before anything is opened (memory is persistent state:
  // never silently replaced by another backend).
  const memoryManager = options.memoryManager ?? (await buildMemoryManager(appConfig.memory, readConfig, getProjectRoot(), home));
  // A guardrail or authorization provider that cannot be loaded stops the start, naming it (never a silent skip).
  await checkGuardProviders(appConfig);
  // Checked before anything is opened: auth disabled in production stops the start here.
  const auth = createAuthRuntime({ home, authDisabled: options.authDisabled, trustedProxies: options.trustedProxies, corsOrigins, originAllowed: corsOriginAllowed });
  // With Redis and a shared database, other processes' runs are live: only the reaper may mark them.
  const sharedRuns = streamBridgeUrl(appConfig) !== null && databaseUrl(appConfig) !== null;
  const persistence = await openPersistence(appConfig, home, { recoverOrphans: !sharedRuns });
  // On PostgreSQL the default memory backend keeps its documents there (shared by every host), importing this
  // home's memory files once (docs/memory.md).
  if (persistence.memory) await useSharedMemory(memoryManager, persistence, logger);
  // What writers killed mid-write left (agent staging dirs, upload parts, temp files) goes before serving.
  const swept = sweepLeftovers(getAgentsDir(), home);
  if (Object.values(swept).some((n) => n > 0)) logger.info({ swept }, "removed files left by interrupted writes");
  const agentFactory = options.agentFactory ?? resolveAgentFactory();
  let coordination: Awaited<ReturnType<typeof openRunCoordination>>;
  try {
    coordination = await openRunCoordination(appConfig, persistence, logger, options.queueMaxSize);
  } catch (err) {
    await persistence.close();
    throw err;
  }
  const { runs } = coordination;
  let mcpTasks: Awaited<ReturnType<typeof openMcpTasks>>;
  try {
    mcpTasks = await openMcpTasks(appConfig, home, readConfig);
  } catch (err) {
    await coordination.close();
    await persistence.close();
    throw err;
  }
  // Every run's events are also kept in the gateway database for `GET .../runs/{run_id}/events` (the bridge forgets
  // them); `run_events.backend: memory` keeps them in this process only.
  const eventsDb = appConfig.run_events.backend === "memory" ? new Database(":memory:") : null;
  const eventStore = eventsDb ? new SqliteRunEventStore(eventsDb) : persistence.runEvents;
  const runEvents = new RunEventLog(eventStore, { maxTraceContent: appConfig.run_events.max_trace_content, legacyDir: path.join(home, "data", "run-events") });
  const bridge = new RecordingStreamBridge(coordination.bridge, runEvents);
  const closing = new AbortController();
  const metrics = options.metrics ?? createGatewayMetrics();
  const sandbox = createSandboxProvider(appConfig, home, getSkillsRoot(appConfig.skills), (record) => {
    const outcome = record.refused ? "refused" : record.limit ? "limit" : record.exit_code === 0 ? "ok" : "error";
    metrics.sandboxCommands.inc({ outcome, limit: record.refused ?? record.limit ?? "none" });
    metrics.sandboxCommandDuration.observe(record.duration_ms / 1000);
  });
  const quotas = new RunQuotas(persistence.usage, metrics, persistence.runSlots);
  const runService = new RunService({
    bridge,
    runs,
    persistence,
    agentFactory,
    getAppConfig: readConfig,
    logger,
    cleanupDelayMs: options.cleanupDelayMs,
    memoryManager,
    sandboxProvider: sandbox,
    runEvents,
    home,
    observer: createRunObserver({ metrics, tracing: options.tracing, onTokens: (userId, tokens) => persistence.usage.add(userId, tokens) }),
    quotas,
  });
  // A finished MCP background task reaches its thread as a run (docs/mcp.md).
  mcpTasks?.service.setLauncher(runLauncher(runService, persistence.runs));
  // Runs whose process died or left are resumed here (shared runs only, docs/durable-runs.md).
  (runs as Partial<Pick<DistributedRunManager, "setResumer">>).setResumer?.((runId, spec, before) => runService.resume(runId, spec, before));
  // One process: the runs a crash of the previous one cut short go on from their last checkpoint.
  if (!coordination.distributed) await runService.resumeAfterRestart(resolveStreamBridgeSection(appConfig)?.max_resumes ?? 3).catch((err: Error) => logger.error({ err: err.message }, "resuming the runs a restart cut short failed"));
  const scheduler = new SchedulerService({ store: persistence.scheduledTasks, runs: persistence.runs, launch: launchWith(runService), config: appConfig.scheduler, logger, ...options.scheduler });
  const authRuntime = auth.runtime(persistence, logger);
  let channels: ChannelService | null;
  try {
    channels = await startChannels({ runService, runs, persistence, bridge, getAppConfig: readConfig, home, redisUrl: streamBridgeUrl(appConfig), authDisabledUser: authRuntime.disabled ? DEFAULT_USER_ID : null, logger, sandbox });
  } catch (err) {
    await coordination.close();
    await persistence.close();
    throw err;
  }
  const threadService = new ThreadService({ persistence, runs, agentFactory, getAppConfig: readConfig, home, sandboxProvider: sandbox });

  const timeouts = { ...DEFAULT_SERVER_TIMEOUTS, ...options.timeouts };
  const app = Fastify({ loggerInstance: logger as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    // Per-route limits are set by installBodyLimits; this is the ceiling for anything registered without one.
    bodyLimit: 8 * 1024 * 1024,
    // A client sending headers or a body a byte at a time is cut off (408) instead of holding a socket forever.
    requestTimeout: timeouts.requestTimeoutMs,
    http: { headersTimeout: timeouts.headersTimeoutMs, connectionsCheckingInterval: timeouts.checkIntervalMs },
    // Long ids are validated by the routes (422), not cut off by the router (414).
    routerOptions: { maxParamLength: 1000 },
    // request.ip / request.protocol honour X-Forwarded-* only from these proxies (login lockout per client).
    trustProxy: auth.trustedProxies.length ? auth.trustedProxies : false,
    // x-request-id in (validated) or a new UUID; on every log line of the request as `request_id` (LogController).
    genReqId: genRequestId,
    // What Node's HTTP parser rejects (bad Content-Length, header overflow): {detail} too, not Fastify's body.
    clientErrorHandler,
    // Malformed URLs and the like, caught before routing: still answered as {detail}.
    frameworkErrors: (error, _request, reply) => {
      const raw = reply as unknown as { code(status: number): { send(body: unknown): unknown } };
      void raw.code(error.statusCode ?? 400).send({ detail: capDetail(error.message) });
    },
  }) as unknown as FastifyInstance;
  // A request reads the config file once: its rate limits, auth and handler see one version (a run it starts reads
  // its own, see RunService.start). Fastify keeps the async context across body parsing.
  app.addHook("onRequest", (_request, _reply, done) => withPinnedAppConfig(() => done()));
  // One JSON line per request, written when the response (SSE included) has finished.
  app.addHook("onResponse", async (request, reply) => {
    const level = request.url === "/health" ? "debug" : "info";
    request.log[level]({ req: { method: request.method, url: request.url }, res: { statusCode: reply.statusCode }, responseTime: Math.round(reply.elapsedTime) }, "request completed");
  });
  installAuth(app, authRuntime);
  app.decorateRequest("thread", null);
  app.addHook("onRequest", async (_request, reply) => {
    // Shutting down behind a load balancer: send the client to another process (it retries or reconnects).
    if (closing.signal.aborted) return reply.code(503).header("connection", "close").header("retry-after", "1").send({ detail: "Server is shutting down" });
  });
  app.decorate("metrics", metrics);
  installHttpObservability(app, metrics, options.tracing);
  const stopReloadCount = onAppConfigReload((result) => metrics.configReloads.inc({ result }));
  app.decorate("deerflow", { runService, threadService, agents: new AgentStore(getAgentsDir()), runs, bridge, persistence, getAppConfig: readConfig, sandbox, quotas, runEvents, memoryManager, distributed: coordination.distributed, pingRedis: coordination.ping, scheduler, closing, mcpTasks: mcpTasks?.service ?? null, channels });
  // Every JSON body is bounded in depth and size here, before any route, store or graph sees it.
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseClientJson(String(body)));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  installBodyLimits(app);
  installRequestGuards(app, { origins: corsOrigins, hosts: options.allowedHosts ?? DEFAULT_ALLOWED_HOSTS });
  await app.register(fastifyCors, {
    origin: (origin, cb) => cb(null, corsOriginAllowed(origin, corsOrigins)),
    // Every method a route has: the web app deletes threads and edits agents.
    methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    exposedHeaders: ["Content-Location", "Location"],
    strictPreflight: false,
  });
  await app.register(fastifySSE, { heartbeatInterval: options.heartbeatMs ?? 15_000, serializer: sseSerializer });
  installErrorHandlers(app);
  const scaledOut = databaseUrl(appConfig) !== null;
  await registerRateLimit(app, { getAppConfig: readConfig, metrics, redis: options.rateLimitRedis, sharedRedisUrl: scaledOut ? streamBridgeUrl(appConfig) : null, scaledOut,
    keyPrefix: !appConfig.limits.rate_limit.redis_url && scaledOut && streamBridgeUrl(appConfig) ? `${appConfig.stream_bridge?.key_prefix ?? "deerflow:"}rl-` : undefined, log: logger });
  await registerOpenApi(app);
  await app.register(registerRoutes);
  // The poller starts once the routes exist (scheduler.enabled; the routes answer either way, as upstream).
  if (appConfig.scheduler.enabled) await scheduler.start();
  app.addHook("onClose", async () => {
    stopReloadCount();
    // Channels first: no new inbound message starts a run while the runs drain.
    await channels?.close();
    await scheduler.stop();
    // Shutdown drain (DeerFlow test_gateway_run_drain_shutdown): interrupt in-flight runs, wait at most 5 s,
    // and only then close the stores, so every final status is written.
    await runs.drain(5_000);
    await runEvents.close();
    eventsDb?.close();
    // Pending memory updates are applied within memory.shutdown_flush_timeout_seconds; the rest is dropped.
    await memoryManager.shutdownFlush(readConfig().memory.shutdown_flush_timeout_seconds * 1000);
    await mcpTasks?.close();
    await closeMcpClients();
    // DeerFlow's container sandbox: stop the idle check, destroy the provisioned sandboxes (upstream shutdown).
    if ("close" in sandbox) await sandbox.close();
    await flushTracing();
    await bridge.close();
    await coordination.close();
    await persistence.close();
    // Last, so the spans of the runs drained above are exported.
    await options.tracing?.shutdown();
  });
  return app;
}
