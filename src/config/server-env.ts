// Process-level settings read from the environment at start-up (not part of config.yaml).

/** Server settings: bind address, port, log level, SSE heartbeat interval (ms). */
export interface ServerEnv {
  host: string;
  port: number;
  logLevel: string;
  heartbeatMs: number;
}

/**
 * Reads `HOST` (default `0.0.0.0`), `PORT` (default 8001), `LOG_LEVEL` (default `info`) and
 * `DEER_FLOW_HEARTBEAT_MS` (SSE heartbeat interval in ms, default 15000).
 * @throws Error when `PORT` or `DEER_FLOW_HEARTBEAT_MS` is not a non-negative integer.
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
  };
}
