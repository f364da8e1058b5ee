// The only file that listens: loads the config, builds the app, serves, and shuts down cleanly on SIGTERM/SIGINT.
import type { FSWatcher } from "chokidar";
import cluster from "node:cluster";
import { getHeapStatistics } from "node:v8";
import { buildApp } from "./app.js";
import type { DistributedRunManager } from "./runtime/runs/distributed-run-manager.js";
import { clusterProblem, runPrimary } from "./cluster.js";
import { clusterMetricsReader } from "./observability/cluster-metrics.js";
import { getAppConfig, getAppConfigStatus } from "./config/app-config.js";
import { applyCallbackEnvDefault, applyProviderEnvDefaults } from "./config/process-env-defaults.js";
import { readServerEnv } from "./config/server-env.js";
import { watchAppConfig } from "./config/watcher.js";
import { createLogger, setLogger } from "./logger.js";
import { startTracing } from "./observability/tracing.js";
import { installPerfPatches } from "./perf/patches.js";

async function main(): Promise<void> {
  // Before the config is read: the shipped config references these, whatever started the process.
  applyProviderEnvDefaults();
  applyCallbackEnvDefault();
  const env = readServerEnv();
  const logger = createLogger(env.logLevel);
  setLogger(logger);
  // Speed-only patches of dependency internals (src/perf/, docs/performance-patches.md), before any agent is built;
  // one line says which are on, which are switched off and which stood down after an upgrade.
  logger.info({ perf_patches: installPerfPatches(env.perfPatches) }, "performance patches");
  try {
    getAppConfig();
  } catch (err) {
    // Start-up is strict: a broken config exits non-zero naming the file and the bad key.
    logger.fatal({ err: (err as Error).message }, "cannot start: invalid configuration");
    process.stderr.write(`deerflow-gateway: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const problem = clusterProblem(getAppConfig(), env.workers);
  if (problem) {
    logger.fatal(problem);
    process.stderr.write(`deerflow-gateway: ${problem}\n`);
    process.exit(1);
  }
  if (env.workers > 1 && runPrimary(env.workers, logger)) return;
  const configPath = getAppConfigStatus().path;
  const tracing = env.otlpTracesEndpoint ? await startTracing({ endpoint: env.otlpTracesEndpoint, serviceName: env.otelServiceName, headers: env.otlpHeaders }, logger) : undefined;
  if (tracing) logger.info({ endpoint: env.otlpTracesEndpoint }, "OpenTelemetry tracing on");
  const app = await buildApp({ logger, heartbeatMs: env.heartbeatMs, corsOrigins: env.corsOrigins, allowedHosts: env.allowedHosts, tracing });
  const watcher: FSWatcher | null = configPath ? watchAppConfig(configPath) : null;
  // A worker's /metrics reports the whole service, summed by the primary.
  if (cluster.isWorker) app.metrics.service = clusterMetricsReader(app.metrics.registry);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    const { distributed, runs } = app.deerflow;
    const graceMs = distributed ? env.shutdownGraceMs : 5_000;
    logger.info({ signal, grace_ms: graceMs }, distributed ? "shutting down: finishing in-flight runs, then handing the rest over" : "shutting down: interrupting in-flight runs");
    // Past the grace, the hand-over (5 s at most), the interrupt of the rest (2 s) and closing the stores.
    const force = setTimeout(() => process.exit(1), graceMs + 15_000).unref();
    // Shared runs: refuse new requests (readiness fails) and cut open streams first; clients reconnect to another
    // process and follow the runs this one finishes during the grace, or that another resumes after it.
    if (distributed) app.deerflow.closing.abort();
    await watcher?.close();
    // Before closing the server: open SSE streams end with the runs, so close() is not held up.
    const handOver = (runs as Partial<Pick<DistributedRunManager, "handOver">>).handOver;
    await (handOver ? handOver.call(runs, graceMs) : runs.drain(graceMs));
    await app.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  await app.listen({ host: env.host, port: env.port });
  // The V8 heap limit in MB and node's own flags (npm start and the image set them, see docs/operations.md "Heap sizing"):
  // operators check them here.
  const heapLimitMb = Math.round(getHeapStatistics().heap_size_limit / 1048576);
  logger.info({ config: configPath, host: env.host, port: env.port, heap_limit_mb: heapLimitMb, exec_argv: process.execArgv, ...(cluster.isWorker ? { worker: cluster.worker?.id } : {}) }, "deerflow-gateway ready");
  // Lines are written in batches (src/logger.ts): whoever waits for "ready" sees it now, not at the next flush.
  logger.flush();
}

main().catch((err: Error) => {
  process.stderr.write(`deerflow-gateway: ${err.message}\n`);
  process.exit(1);
});
