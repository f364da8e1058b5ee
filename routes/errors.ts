// The one table from domain error codes to HTTP statuses, and the error handlers that answer `{detail}`.
import type { FastifyError, FastifyInstance } from "fastify";
import { DeerflowError, type ErrorCode } from "../src/errors.js";
import { isStoreUnavailable, STORE_UNAVAILABLE_DETAIL } from "../src/runtime/persistence/store-unavailable.js";

/** HTTP status of every domain error code (typed: a new code without a status does not compile). */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  config_invalid: 503,
  config_not_found: 503,
  agent_config_invalid: 500,
  invalid_request: 400,
  validation_failed: 422,
  not_found: 404,
  conflict: 409,
  forbidden: 403,
  unsupported: 501,
  model_unresolvable: 422,
  payload_too_large: 413,
  precondition_failed: 412,
  unsupported_media_type: 415,
  rate_limited: 429,
  upstream_unavailable: 502,
};

/** Longest error detail echoed from a framework message, in characters. */
const MAX_DETAIL_CHARS = 300;

/** `message`, cut to {@link MAX_DETAIL_CHARS} characters with an ellipsis (for details that quote the request). */
export function capDetail(message: string): string {
  return message.length > MAX_DETAIL_CHARS ? `${message.slice(0, MAX_DETAIL_CHARS)}…` : message;
}

/**
 * Installs the error and not-found handlers: domain errors get their table status and `{detail}` (a string, or
 * the 422 issue list); malformed JSON is 422 `json_invalid`; other 4xx keep their status with `{detail}`;
 * anything else is logged with its cause and answered 500 `{"detail": "Internal server error"}`.
 */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (reply.raw.headersSent) {
      request.log.error({ err }, "error after the response started");
      return;
    }
    if (DeerflowError.isInstance(err)) {
      const status = STATUS_BY_CODE[err.code];
      const details = (err as DeerflowError & { details?: unknown }).details;
      const retryAfter = (err as DeerflowError & { retryAfterSeconds?: number }).retryAfterSeconds;
      if (retryAfter !== undefined) reply.header("Retry-After", String(retryAfter));
      return reply.code(status).send({ detail: details ?? (status === 503 ? "Configuration not available" : err.message) });
    }
    if (err.code === "FST_ERR_CTP_INVALID_JSON_BODY" || err instanceof SyntaxError) {
      return reply.code(422).send({ detail: [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error", ctx: { error: err.message } }] });
    }
    // The shared database or Redis is down: the client may retry (the pools reconnect by themselves).
    if (isStoreUnavailable(err)) {
      request.log.warn({ err: err.message }, "store unavailable");
      return reply.code(503).header("retry-after", "1").send({ detail: STORE_UNAVAILABLE_DETAIL });
    }
    const status = err.statusCode ?? 500;
    // Framework errors may quote the request (a 414 repeats the whole URL): the detail is capped.
    if (status >= 400 && status < 500) return reply.code(status).send({ detail: capDetail(err.message) });
    request.log.error({ err }, "unhandled error");
    return reply.code(500).send({ detail: "Internal server error" });
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: capDetail(`Not found: ${request.method} ${request.url.split("?")[0]}`) });
  });
}
