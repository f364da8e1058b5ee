// Process-level settings read from the environment at start-up (not part of config.yaml).

/** Server settings: bind address, port, log level, SSE heartbeat interval (ms), allowed CORS origins. */
export interface ServerEnv {
  host: string;
  port: number;
  logLevel: string;
  heartbeatMs: number;
  /** Browser origins allowed to call the API (`*` = any); default: pages served from localhost / 127.0.0.1. */
  corsOrigins: string[];
  /** Host names served besides IP literals (`DEER_FLOW_ALLOWED_HOSTS`); undefined = loopback names only. */
  allowedHosts?: string[];
  /** Gateway processes to run on this machine (`WORKERS`, default 1); more than one needs Redis and PostgreSQL. */
  workers: number;
}

/** Origins allowed when `DEER_FLOW_CORS_ORIGINS` is unset: local development front ends on any port. */
export const DEFAULT_CORS_ORIGINS = ["http://localhost", "http://127.0.0.1", "https://localhost", "https://127.0.0.1"];

/**
 * Reads `HOST` (default `0.0.0.0`), `PORT` (default 8001), `LOG_LEVEL` (default `info`),
 * `DEER_FLOW_HEARTBEAT_MS` (SSE heartbeat interval in ms, default 15000) and `DEER_FLOW_CORS_ORIGINS`
 * (comma-separated origins, `*` for any; default localhost / 127.0.0.1 on any port) and `DEER_FLOW_ALLOWED_HOSTS`
 * (comma-separated host names the gateway answers to besides IP literals, `*.example.com` for sub-domains, `*`
 * for any; default `localhost` and `*.localhost`, against DNS rebinding), `WORKERS` (processes sharing
 * the port, default 1).
 * @throws Error when `PORT` or `DEER_FLOW_HEARTBEAT_MS` is not a non-negative integer, or `WORKERS` not >= 1.
 */
export function readServerEnv(env: NodeJS.ProcessEnv = process.env): ServerEnv {
  const int = (name: string, fallback: number, min: number): number => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got '${raw}'`);
    return n;
  };
  return {
    host: env.HOST?.trim() || "0.0.0.0",
    port: int("PORT", 8001, 0),
    logLevel: env.LOG_LEVEL?.trim() || "info",
    heartbeatMs: int("DEER_FLOW_HEARTBEAT_MS", 15_000, 0),
    workers: int("WORKERS", 1, 1),
    corsOrigins: env.DEER_FLOW_CORS_ORIGINS?.trim()
      ? env.DEER_FLOW_CORS_ORIGINS.split(",").map((o) => o.trim().replace(/\/+$/, "")).filter(Boolean)
      : DEFAULT_CORS_ORIGINS,
    ...(env.DEER_FLOW_ALLOWED_HOSTS?.trim() ? { allowedHosts: env.DEER_FLOW_ALLOWED_HOSTS.split(",").map((h) => h.trim()).filter(Boolean) } : {}),
  };
}
