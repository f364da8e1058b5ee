// Cluster mode (`WORKERS=N npm start`): N gateway processes on one machine sharing the port through node:cluster.
// Allowed only when runs can be shared: the Redis stream bridge and a PostgreSQL database.
import cluster from "node:cluster";
import type { Logger } from "pino";
import { serveClusterMetrics } from "./observability/cluster-metrics.js";
import type { AppConfig } from "./config/schema.js";
import { databaseUrl } from "./runtime/persistence/persistence.js";
import { streamBridgeUrl } from "./runtime/stream/scale-out.js";

/**
 * Why `workers` processes cannot serve this config, or null when they can (one process always can). Several
 * processes each with their own SQLite file or in-memory bridge would split threads, runs and streams between
 * them: a request landing on the wrong process would not find its run.
 */
export function clusterProblem(appConfig: AppConfig, workers: number): string | null {
  if (workers <= 1) return null;
  const missing: string[] = [];
  if (!streamBridgeUrl(appConfig)) missing.push("stream_bridge: {type: redis, url: redis://...}");
  if (!databaseUrl(appConfig)) missing.push("database: {backend: postgres, url: postgres://...}");
  if (appConfig.checkpointer && appConfig.checkpointer.type !== "postgres") missing.push("checkpointer.type postgres (or no checkpointer section)");
  return missing.length ? `WORKERS=${workers} needs runs shared between processes; set ${missing.join(" and ")} in config.yaml` : null;
}

/**
 * In the primary process: forks `workers` workers (each runs src/server.ts and listens on the shared port) and
 * replaces one that dies unexpectedly; answers the workers' requests for the service-wide `/metrics`; SIGTERM/SIGINT are forwarded and the primary exits when all have. Returns
 * false in a worker (the caller then serves).
 */
export function runPrimary(workers: number, logger: Logger): boolean {
  if (!cluster.isPrimary) return false;
  let stopping = false;
  serveClusterMetrics();
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) {
      if (!Object.keys(cluster.workers ?? {}).length) process.exit(0);
      return;
    }
    logger.warn({ pid: worker.process.pid, code, signal }, "worker exited; starting a new one");
    cluster.fork();
  });
  const stop = (sig: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(sig);
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  logger.info({ workers }, "deerflow-gateway primary: starting workers");
  return true;
}
