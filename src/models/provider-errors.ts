// What kind of provider failure an error from a model call is: the one classification shared by the retry log,
// the metrics and the fallback chain.
import { MiddlewareError } from "langchain";

/** Kinds of provider failure. The first four are transient and make a model fall back to the next in its chain. */
export type ProviderFailure = "connection" | "timeout" | "rate_limited" | "server_error" | "client_error" | "other";

/** The failures on which {@link ModelFallbackMiddleware} moves on to the next model. */
export const FALLBACK_FAILURES: ReadonlySet<ProviderFailure> = new Set(["connection", "timeout", "rate_limited", "server_error"]);

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"]);

/** The HTTP status an error carries (`status`, `statusCode` or `response.status`), if any. */
export function statusOf(err: unknown): number | undefined {
  if (!err || typeof err !== "object") return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  for (const v of [e.status, e.statusCode, e.response?.status]) if (typeof v === "number") return v;
  return undefined;
}

/** The error codes along an error's `cause` chain (`ECONNREFUSED`...), at most 5 deep. */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
    e = (e as { cause?: unknown }).cause;
  }
  return codes;
}

/**
 * Classifies an error thrown by a model call. Timeouts are recognised by name (`TimeoutError` from
 * @langchain/openai, the OpenAI SDK's `APIConnectionTimeoutError`); connection failures by the SDK's
 * `APIConnectionError` or a socket error code on the cause chain; then the HTTP status: 429 `rate_limited`,
 * 5xx `server_error`, other 4xx `client_error`. Anything else is `other`.
 */
export function classifyProviderError(error: unknown): { failure: ProviderFailure; status?: number } {
  // langchain wraps errors raised under a middleware in MiddlewareError (the original as `cause`). Its own brand
  // check, not the constructor's name: a bundler may rename the class, and another class may share the name.
  let err = error;
  while (MiddlewareError.isInstance(err) && err.cause) err = err.cause;
  const status = statusOf(err);
  // The OpenAI SDK's classes keep `name` "Error": look at the constructor's name too.
  const names = err && typeof err === "object" ? [String((err as { name?: unknown }).name ?? ""), String((err as object).constructor?.name ?? "")] : [];
  const is = (n: string) => names.includes(n);
  if (is("TimeoutError") || is("APIConnectionTimeoutError") || codesOf(err).includes("ETIMEDOUT")) return { failure: "timeout", status };
  if (status === undefined && (is("APIConnectionError") || codesOf(err).some((c) => CONNECTION_CODES.has(c)))) return { failure: "connection" };
  if (status === 429) return { failure: "rate_limited", status };
  if (status !== undefined && status >= 500) return { failure: "server_error", status };
  if (status !== undefined && status >= 400) return { failure: "client_error", status };
  return { failure: "other", status };
}
