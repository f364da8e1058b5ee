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
  /** OTLP/HTTP traces URL when tracing is configured, else null (tracing off). */
  otlpTracesEndpoint: string | null;
  /** `service.name` of exported spans. */
  otelServiceName: string;
  /** Headers for the OTLP exporter (`OTEL_EXPORTER_OTLP_HEADERS`, `k=v,k2=v2`). */
  otlpHeaders: Record<string, string>;
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
 * for any; default `localhost` and `*.localhost`, against DNS rebinding). Tracing follows the standard
 * OpenTelemetry variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL), else `OTEL_EXPORTER_OTLP_ENDPOINT`
 * + `/v1/traces`; off when neither is set or `OTEL_TRACES_EXPORTER=none`; `OTEL_SERVICE_NAME` (default
 * `deerflow-gateway`), `OTEL_EXPORTER_OTLP_HEADERS`.
 * `WORKERS` (processes sharing the port, default 1).
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
    otlpTracesEndpoint: otlpEndpoint(env),
    otelServiceName: env.OTEL_SERVICE_NAME?.trim() || "deerflow-gateway",
    otlpHeaders: Object.fromEntries(
      (env.OTEL_EXPORTER_OTLP_HEADERS ?? "")
        .split(",")
        .map((pair) => pair.split("=").map((p) => decodeURIComponent(p.trim())))
        .filter((kv) => kv.length === 2 && kv[0]),
    ),
  };
}

/** The OTLP/HTTP traces URL from the standard OpenTelemetry variables, or null when tracing is not configured. */
function otlpEndpoint(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_TRACES_EXPORTER?.trim() === "none") return null;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : null;
}
