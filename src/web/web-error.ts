// The one error type of the research tools: every failure a provider or the SSRF guard meets is thrown as a
// WebToolError and turned into the model-facing text `Error: <provider>: <message>` by the tool runner, with
// `reason` as the failure label of the metrics. Nothing else leaks to the model (no stack, no host path).

/** Failure classes, the `reason` label of `deerflow_web_tool_failures_total`. */
export type WebFailureReason =
  | "blocked_url"
  | "invalid_input"
  | "timeout"
  | "rate_limited"
  | "http_error"
  | "too_large"
  | "bad_response"
  | "network"
  | "no_key"
  | "unsupported";

/** A research tool failure the model sees as a tool result (never a failed run). */
export class WebToolError extends Error {
  /**
   * @param reason the failure class (metrics label).
   * @param message a short sentence for the model; must hold no secret and no host path.
   */
  constructor(
    readonly reason: WebFailureReason,
    message: string,
  ) {
    super(message);
    this.name = "WebToolError";
  }
}

/** True for an abort caused by a timeout signal (`AbortSignal.timeout`) rather than a cancelled run. */
function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; cause?: { name?: string } } | null;
  return e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError";
}

/**
 * Classifies anything a provider call threw as a WebToolError: kept as is when it already is one; a timeout
 * signal is `timeout`; undici's network codes (`ECONNREFUSED`, `ENOTFOUND`, ...) are `network`; the rest is
 * `bad_response` with the error's message (first line, at most 200 characters).
 */
export function toWebToolError(err: unknown, timeoutSeconds: number): WebToolError {
  if (err instanceof WebToolError) return err;
  if (isTimeout(err)) return new WebToolError("timeout", `timed out after ${timeoutSeconds} s`);
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } } | null;
  if (e?.name === "AbortError") return new WebToolError("timeout", "the request was aborted (run cancelled or timed out)");
  const code = e?.cause?.code ?? e?.code;
  if (code && /^(E[A-Z_]+|UND_ERR_[A-Z_]+)$/.test(code)) return new WebToolError("network", `network error (${code})`);
  const message = String(e?.message ?? err).split("\n")[0].slice(0, 200);
  return new WebToolError("bad_response", message || "unknown error");
}
