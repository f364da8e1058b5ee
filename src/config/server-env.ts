// Process-level settings read from the environment at start-up (not part of config.yaml).
import { PERF_PATCH_NAMES, type PerfPatchName } from "../perf/state.js";

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
  /** The speed patches to install (`DEER_FLOW_PERF_PATCHES`, see {@link parsePerfPatches}); default all. */
  perfPatches: Set<PerfPatchName>;
  /**
   * How long, in ms, a process on SIGTERM lets its runs finish before handing the rest to another process
   * (`DEER_FLOW_SHUTDOWN_GRACE_SECONDS`, default 60; shared runs only, docs/durable-runs.md).
   */
  shutdownGraceMs: number;
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
 * `WORKERS` (processes sharing the port, default 1). `DEER_FLOW_SHUTDOWN_GRACE_SECONDS` (default 60). `DEER_FLOW_PERF_PATCHES`: see {@link parsePerfPatches}.
 * @throws Error when `PORT` or `DEER_FLOW_HEARTBEAT_MS` is not a non-negative integer, `WORKERS` not >= 1, or
 *   `DEER_FLOW_PERF_PATCHES` names an unknown patch.
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
    shutdownGraceMs: int("DEER_FLOW_SHUTDOWN_GRACE_SECONDS", 60, 0) * 1000,
    perfPatches: parsePerfPatches(env.DEER_FLOW_PERF_PATCHES),
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

/**
 * `DEER_FLOW_PERF_PATCHES`: which speed patches of dependency internals the server installs
 * (docs/performance-patches.md). Unset, empty, `on` or `all`: every patch; `off` or `none`: none; otherwise a
 * comma-separated list of patch names to install (`callback-copy,runnable-scope`), or of names each prefixed with
 * `-` to install all but those (`-pregel-stream`). Case and spaces around names are ignored.
 * @throws Error naming the unknown entry and the known patch names, or when names and `-names` are mixed.
 */
export function parsePerfPatches(raw: string | undefined): Set<PerfPatchName> {
  const value = raw?.trim().toLowerCase() ?? "";
  if (value === "" || value === "on" || value === "all") return new Set(PERF_PATCH_NAMES);
  if (value === "off" || value === "none") return new Set();
  const entries = value.split(",").map((e) => e.trim()).filter(Boolean);
  const excluding = entries.every((e) => e.startsWith("-"));
  if (!excluding && entries.some((e) => e.startsWith("-"))) {
    throw new Error(`DEER_FLOW_PERF_PATCHES lists patches to install or, each with '-', patches to leave out, not both: got '${raw}'`);
  }
  const names = new Set<PerfPatchName>();
  for (const entry of entries) {
    const name = excluding ? entry.slice(1) : entry;
    if (!(PERF_PATCH_NAMES as readonly string[]).includes(name)) {
      throw new Error(`DEER_FLOW_PERF_PATCHES: unknown patch '${name}' (known: ${PERF_PATCH_NAMES.join(", ")}; or on, off)`);
    }
    names.add(name as PerfPatchName);
  }
  return excluding ? new Set(PERF_PATCH_NAMES.filter((n) => !names.has(n))) : names;
}
