// What a request answers while the shared database (PostgreSQL) or Redis cannot be reached: 503 with a `{detail}`
// that names the store, not a 500 with a driver message (docs/durable-runs.md, "Database or Redis down"). The pools
// reconnect by themselves, so the service recovers without a restart once the store is back.

/** Network error codes of a refused, reset or timed-out connection (Node's `err.code`). */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "EAI_AGAIN"]);

/** Messages of `pg` and `ioredis` when their connection is gone (they carry no code). */
const LOST_CONNECTION = /Connection terminated|connection error|Connection is closed|timeout exceeded when trying to connect|MaxRetriesPerRequest|Stream isn't writeable/i;

/**
 * Whether `err` (or an error in its `cause` chain, or one of an `AggregateError`'s) says a store connection failed:
 * a refused or lost socket, or a PostgreSQL SQLSTATE of class 08 (connection exception) or 57P01-57P03 (the server
 * is shutting down, or starting up).
 */
export function isStoreUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  if (NETWORK_CODES.has(code) || code.startsWith("08") || ["57P01", "57P02", "57P03"].includes(code)) return true;
  if (typeof e.message === "string" && LOST_CONNECTION.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnavailable(x, depth + 1))) return true;
  return isStoreUnavailable(e.cause, depth + 1);
}

/** The `{detail}` of a 503 for a store that cannot be reached: no driver message, host or path in it. */
export const STORE_UNAVAILABLE_DETAIL = "The gateway's database or Redis is unavailable; retry shortly";
