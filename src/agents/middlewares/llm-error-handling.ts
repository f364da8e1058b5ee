// Port of DeerFlow agents/middlewares/llm_error_handling_middleware.py (LLMErrorHandlingMiddleware): retries with
// decorrelated-jitter backoff, a circuit breaker, a process-wide cap on model calls in flight, and a user-facing
// answer instead of a failed run.
import { AIMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { classifyProviderError, statusOf } from "../../models/provider-errors.js";
import { MODEL_NAME_METADATA_KEY } from "../../observability/run-observer.js";
import { currentRunScope } from "../../observability/run-scope.js";
import { DeerflowMiddleware } from "./base.js";
import { CircuitBreaker, breakerFor, callSlots } from "./llm-call-guards.js";
import type { CircuitBreakerConfig, LlmCallConfig } from "./llm-error-handling-options.js";
import { isControlFlowError, stripStackTrace } from "./tool-error-handling.js";

/** Why a model call failed, as upstream's `_classify_error` names it. */
export type LlmFailureReason = "quota" | "auth" | "burst_rate" | "transient" | "busy" | "generic";

const QUOTA = ["insufficient_quota", "quota", "billing", "credit", "payment", "余额不足", "超出限额", "额度不足", "欠费"];
const AUTH = ["authentication", "unauthorized", "invalid api key", "invalid_api_key", "permission", "forbidden", "access denied", "无权", "未授权"];
const BURST = ["limit_burst_rate", "burst rate", "burst_rate", "request burst"];
const BUSY = ["server busy", "temporarily unavailable", "try again later", "please retry", "please try again", "overloaded", "high demand", "rate limit", "负载较高", "服务繁忙", "稍后重试", "请稍后重试"];
/** Upstream caps a burst-rate 429 at 2 attempts whatever `retry_max_attempts` says. */
const BURST_MAX_ATTEMPTS = 2;

const has = (text: string, patterns: readonly string[]) => patterns.some((p) => text.includes(p));

/** The provider's error code (`code`, or the body's `error.code` / `error.type`), lower-cased; "" if none. */
function errorCode(err: unknown): string {
  const e = err as { code?: unknown; error?: { code?: unknown; type?: unknown } } | null;
  const v = e?.code ?? e?.error?.code ?? e?.error?.type;
  return v === undefined || v === null ? "" : String(v).toLowerCase();
}

/** The error's text without stack frames: what the model's user may see. */
export function errorDetail(err: unknown): string {
  const text = err instanceof Error ? err.message || err.constructor.name : String(err);
  return stripStackTrace(text).trim() || "unknown error";
}

/**
 * Classifies a model-call error (upstream `_classify_error`): quota and auth texts are final; a burst-rate 429 is
 * retried once; connection errors, timeouts, 408/409/425/429/5xx and "busy" texts are transient.
 * @returns whether to retry, and the reason.
 */
export function classifyLlmError(err: unknown): { retriable: boolean; reason: LlmFailureReason } {
  const text = errorDetail(err).toLowerCase();
  const code = errorCode(err);
  if (has(text, QUOTA) || has(code, QUOTA)) return { retriable: false, reason: "quota" };
  if (has(text, AUTH) || statusOf(err) === 401 || statusOf(err) === 403) return { retriable: false, reason: "auth" };
  if (has(text, BURST) || has(code, BURST)) return { retriable: true, reason: "burst_rate" };
  const { failure, status } = classifyProviderError(err);
  if (failure === "connection" || failure === "timeout" || failure === "rate_limited" || failure === "server_error") return { retriable: true, reason: "transient" };
  if (status === 408 || status === 409 || status === 425) return { retriable: true, reason: "transient" };
  if (has(text, BUSY)) return { retriable: true, reason: "busy" };
  return { retriable: false, reason: "generic" };
}

/**
 * The provider's `Retry-After` in ms (`retry-after-ms`, else `retry-after` as seconds or an HTTP date), from the
 * error's `headers` (a `Headers` or a plain record, as the OpenAI SDK sets it); null when absent or unreadable.
 */
export function retryAfterMs(err: unknown, now = Date.now()): number | null {
  // The provider's error may come wrapped (langchain's MiddlewareError keeps it as `cause`).
  let headers: unknown;
  for (let e = err as { headers?: unknown; response?: { headers?: unknown }; cause?: unknown } | null, i = 0; e && typeof e === "object" && !headers && i < 32; e = e.cause as typeof e, i++) {
    headers = e.headers ?? e.response?.headers;
  }
  if (!headers || typeof headers !== "object") return null;
  const get = (k: string): string | null => {
    const h = headers as { get?: (k: string) => string | null } & Record<string, unknown>;
    const v = typeof h.get === "function" ? h.get(k) : (h[k] ?? h[k.toLowerCase()]);
    return typeof v === "string" && v.trim() ? v.trim() : null;
  };
  const ms = get("retry-after-ms");
  if (ms !== null && Number.isFinite(Number(ms))) return Math.max(0, Math.round(Number(ms)));
  const raw = get("retry-after");
  if (raw === null) return null;
  if (Number.isFinite(Number(raw))) return Math.max(0, Math.round(Number(raw) * 1000));
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The next retry delay in ms (upstream `_build_retry_delay_ms`): the provider's Retry-After as is, else AWS
 * decorrelated jitter `uniform(base, min(cap, max(base, prev * 3)))` with `base` the burst base for a burst-rate
 * 429; the cap wins over a base above it.
 */
export function nextRetryDelayMs(config: LlmCallConfig, prevMs: number | null, err: unknown, reason: LlmFailureReason, random = Math.random): number {
  const after = retryAfterMs(err);
  if (after !== null) return after;
  const base = reason === "burst_rate" ? config.burst_retry_base_delay_ms : config.retry_base_delay_ms;
  const cap = config.retry_cap_delay_ms;
  const high = Math.min(cap, Math.max(base, (prevMs ?? base) * 3));
  if (high < base) return cap;
  return base + Math.floor(random() * (high - base + 1));
}

/** The text the user reads in place of a failed call (upstream `_build_user_message`). */
export function userMessageFor(reason: LlmFailureReason | "circuit_open", detail: string): string {
  switch (reason) {
    case "circuit_open":
      return "The configured LLM provider is currently unavailable due to continuous failures. Circuit breaker is engaged to protect the system. Please wait a moment before trying again.";
    case "quota":
      return "The configured LLM provider rejected the request because the account is out of quota, billing is unavailable, or usage is restricted. Please fix the provider account and try again.";
    case "auth":
      return "The configured LLM provider rejected the request because authentication or access is invalid. Please check the provider credentials and try again.";
    case "burst_rate":
      return "The configured LLM provider is temporarily throttling requests because the request rate increased too quickly (burst-rate limit). Please wait a moment and try again.";
    case "busy":
    case "transient":
      return "The configured LLM provider is temporarily unavailable after multiple retries. Please wait a moment and continue the conversation.";
    default:
      return `LLM request failed: ${detail.slice(0, 500)}`;
  }
}

/** The AI message that ends a failed call (upstream `_build_error_fallback_message`; the kwargs are its markers). */
function errorAnswer(reason: LlmFailureReason | "circuit_open", err: unknown, type: string): AIMessage {
  const detail = err === null ? "LLM circuit breaker is open" : errorDetail(err);
  return new AIMessage({
    content: userMessageFor(reason, detail),
    additional_kwargs: { deerflow_error_fallback: true, error_type: type, error_reason: reason, error_detail: detail.slice(0, 500) },
    response_metadata: { finish_reason: "error" },
  });
}

/** Options of {@link LLMErrorHandlingMiddleware}. */
export interface LLMErrorHandlingOptions {
  llmCall: LlmCallConfig;
  circuitBreaker: CircuitBreakerConfig;
  /** Attempts for this agent's model (its entry's `max_retries` + 1); default `llm_call.retry_max_attempts`. */
  maxAttempts?: number;
  /** Waits `ms` (tests pass a fake); default a timer cancelled by the run's signal. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const sleepFor = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** The circuit's key for a model: its provider endpoint (base URL), else its config entry's name, else its type. */
export function providerKey(model: unknown): string {
  const m = model as { clientConfig?: { baseURL?: unknown }; metadata?: Record<string, unknown>; _llmType?: () => string } | null;
  const url = m?.clientConfig?.baseURL;
  if (typeof url === "string" && url) return url;
  const name = m?.metadata?.[MODEL_NAME_METADATA_KEY];
  if (typeof name === "string") return name;
  return typeof m?._llmType === "function" ? m._llmType() : "default";
}

/**
 * Wraps every model call: the call waits for a slot when `llm_call.max_concurrent_calls` is set (process-wide);
 * a provider whose circuit is open is not called and the turn ends at once with upstream's circuit-breaker text;
 * a retriable failure (connection, timeout, 429, 5xx, busy) is retried up to the agent's attempts (`max_retries`
 * + 1 of its model entry, else `llm_call.retry_max_attempts`; a burst-rate 429 at most twice) after the
 * provider's `Retry-After`, else a decorrelated-jitter delay, each retry logged (every failed attempt is
 * also logged and counted in `deerflow_provider_retries_total` by the model's retry hook) and written as a `{type: "llm_retry", attempt, max_attempts, wait_ms,
 * reason}` custom stream event; a call that already streamed tokens is not retried (the client has them). What
 * still fails with a provider failure (an HTTP status, a connection error or a timeout; other errors, e.g. the
 * scripted model's `!fail`, still fail the run with their message) becomes an AI message with user-facing text (no stack trace, no host path) flagged
 * `deerflow_error_fallback`, and counts against the provider's circuit (`circuit_breaker`: five failures in a
 * row open it for 60 s, then one probe call decides). Aborts and graph interrupts pass through. This middleware
 * owns retries: the models of a lead agent are built with the client's own retries off. Hook: wrapModelCall.
 */
export class LLMErrorHandlingMiddleware extends DeerflowMiddleware {
  readonly name = "LLMErrorHandlingMiddleware";

  constructor(private readonly options: LLMErrorHandlingOptions) {
    super();
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const breaker = breakerFor(providerKey(request.model), this.options.circuitBreaker);
    if (!breaker.admit()) return errorAnswer("circuit_open", null, "CircuitBreakerOpen");
    const signal = request.runtime?.signal as AbortSignal | undefined;
    const scope = currentRunScope();
    let prev: number | null = null;
    for (let attempt = 1; ; attempt++) {
      const streamedBefore = scope?.tokensStreamed ?? 0;
      try {
        const response = await callSlots(this.options.llmCall.max_concurrent_calls).run(() => handler(request) as Promise<unknown>, signal);
        breaker.success();
        return response as never;
      } catch (err) {
        if (isControlFlowError(err, signal)) {
          breaker.release();
          throw err;
        }
        const { retriable, reason } = classifyLlmError(err);
        // Not a provider's answer (no HTTP status, not a connection or timeout failure): a local fault, such as the
        // scripted model's `!fail`, keeps failing the run (an error frame with its message) as before.
        if (reason === "generic" && classifyProviderError(err).failure === "other") {
          breaker.release();
          throw err;
        }
        const streamed = (scope?.tokensStreamed ?? 0) > streamedBefore;
        const max = Math.min(this.options.maxAttempts ?? this.options.llmCall.retry_max_attempts, reason === "burst_rate" ? BURST_MAX_ATTEMPTS : Infinity);
        if (retriable && !streamed && attempt < max) {
          prev = nextRetryDelayMs(this.options.llmCall, prev, err, reason);
          this.noteRetry(request, err, { attempt, max_attempts: max, wait_ms: prev, reason });
          await (this.options.sleep ?? sleepFor)(prev, signal);
          continue;
        }
        return this.fail(request, breaker, err, reason, retriable, attempt);
      }
    }
  }

  private noteRetry(request: ModelRequest, err: unknown, event: { attempt: number; max_attempts: number; wait_ms: number; reason: LlmFailureReason }): void {
    const scope = currentRunScope();
    const model = String((request.model as { metadata?: Record<string, unknown> }).metadata?.[MODEL_NAME_METADATA_KEY] ?? "unknown");
    const { failure, status } = classifyProviderError(err);
    (scope?.log ?? getLogger()).warn({ model, reason: failure, status, attempt: event.attempt, wait_ms: event.wait_ms, err: errorDetail(err) }, `model '${model}' call will be retried (${failure}): retry ${event.attempt}/${event.max_attempts - 1} in ${event.wait_ms} ms`);
    (request.runtime as { writer?: (c: unknown) => void } | undefined)?.writer?.({ type: "llm_retry", ...event });
  }

  private fail(request: ModelRequest, breaker: CircuitBreaker, err: unknown, reason: LlmFailureReason, retriable: boolean, attempts: number): AIMessage {
    // A burst-rate throttle is not an outage: it must not open the circuit (upstream #4290).
    if (retriable && reason !== "burst_rate") breaker.failure();
    else breaker.release();
    const scope = currentRunScope();
    const model = String((request.model as { metadata?: Record<string, unknown> }).metadata?.[MODEL_NAME_METADATA_KEY] ?? "unknown");
    (scope?.log ?? getLogger()).warn({ model, reason, attempts, err: errorDetail(err) }, `model '${model}' call failed after ${attempts} attempt(s); the user is told`);
    return errorAnswer(reason, err, err instanceof Error ? err.constructor.name : typeof err);
  }
}
