// Typed domain errors. `src/` throws these; the HTTP layer maps each code to a status in one table
// (routes/errors.ts), so a new code without a status fails to compile there.

/** Every domain error code the gateway knows. */
export type ErrorCode =
  | "config_invalid"
  | "config_not_found"
  | "agent_config_invalid"
  | "invalid_request"
  | "validation_failed"
  | "not_found"
  | "conflict"
  | "forbidden"
  | "unsupported"
  | "model_unresolvable"
  | "payload_too_large"
  | "precondition_failed"
  | "unsupported_media_type"
  | "rate_limited"
  | "upstream_unavailable";

const BRAND = Symbol.for("deerflow-gateway.DeerflowError");

/**
 * Base class of the gateway's domain errors: a stable `code`, a message safe to show to clients, and an
 * optional `cause`. Branded with `Symbol.for`, so {@link DeerflowError.isInstance} works across module copies.
 */
export class DeerflowError extends Error {
  readonly [BRAND] = true;
  /** Machine-readable error code; the HTTP status is derived from it. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }

  /** True when `value` is a DeerflowError (from any copy of this module). */
  static isInstance(value: unknown): value is DeerflowError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** The config file is missing, unreadable, not valid YAML, fails the schema or references an unset `$VAR`. */
export class ConfigError extends DeerflowError {
  /** Absolute path of the config file concerned, when known. */
  readonly path?: string;
  constructor(message: string, options?: { path?: string; cause?: unknown; code?: "config_invalid" | "config_not_found" | "agent_config_invalid" }) {
    super(options?.code ?? "config_invalid", message, options);
    this.path = options?.path;
  }
}

/** A named thing (thread, run, agent, model, assistant, checkpoint) does not exist. HTTP 404. */
export class NotFoundError extends DeerflowError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The request conflicts with current state (busy thread, existing agent). HTTP 409. */
export class ConflictError extends DeerflowError {
  constructor(message: string) {
    super("conflict", message);
  }
}

/** A request value is well-formed but not acceptable (bad name, bad id, unknown option). HTTP 422. */
export class ValidationError extends DeerflowError {
  /** Optional FastAPI-style detail list `{type, loc, msg, input?, ctx?}` returned instead of the message. */
  readonly details?: ValidationIssue[];
  constructor(message: string, details?: ValidationIssue[]) {
    super("validation_failed", message);
    this.details = details;
  }
}

/** A request payload that cannot be used as sent (malformed message, mismatched checkpoint). HTTP 400. */
export class BadRequestError extends DeerflowError {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

/** One entry of a 422 `detail` list (FastAPI's shape, which DeerFlow's gateway and its web app use). */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** The caller may not touch this resource (e.g. a path outside the thread's own directories). HTTP 403. */
export class ForbiddenError extends DeerflowError {
  constructor(message: string) {
    super("forbidden", message);
  }
}

/** An upload exceeds a configured limit (file size, total size, file count). HTTP 413. */
export class PayloadTooLargeError extends DeerflowError {
  constructor(message: string) {
    super("payload_too_large", message);
  }
}

/** A conditional request's precondition does not hold (an artifact changed since it was read). HTTP 412. */
export class PreconditionFailedError extends DeerflowError {
  constructor(message: string) {
    super("precondition_failed", message);
  }
}

/** The target's content type cannot be handled this way (binary or non-UTF-8 artifact edits). HTTP 415. */
export class UnsupportedMediaTypeError extends DeerflowError {
  constructor(message: string) {
    super("unsupported_media_type", message);
  }
}

/** A rate limit, concurrency cap or token quota refuses the request; nothing was started. HTTP 429 + Retry-After. */
export class RateLimitedError extends DeerflowError {
  /** Seconds after which the same request may succeed (the `Retry-After` header). */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super("rate_limited", message);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
  }
}

/** A service the gateway depends on for this request (the sandbox service) is down, too slow or failed. HTTP 502. */
export class UpstreamUnavailableError extends DeerflowError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("upstream_unavailable", message, options);
  }
}
