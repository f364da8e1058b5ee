// What every third-party research provider shares: reading its entry (key, base_url, timeout, counts), calling its
// HTTP API through the context's fetch with a deadline, and turning every failure into one short error that names
// the provider and never carries the key. The tool runner (run-web-call.ts) shows it to the model as
// `Error: <provider>: <message>` and counts it under its `reason`.
import { readProviderEnv } from "../config/web-env.js";
import type { ProviderCallContext } from "./types.js";
import { WebToolError, type WebFailureReason } from "./web-error.js";

/**
 * A provider call that failed: transport error, timeout, HTTP status, garbage body, missing key or a bad entry
 * value. `message` is the short reason (no provider prefix: the runner adds the provider's name; no secret);
 * `provider` is the display name (`Tavily`, `Brave Search`), `reason` the metrics class.
 */
export class WebProviderError extends WebToolError {
  constructor(
    readonly provider: string,
    message: string,
    reason: WebFailureReason = "bad_response",
  ) {
    super(reason, message);
    this.name = "WebProviderError";
  }
}

/** Where a provider's credential comes from: the entry key (`api_key` or upstream's `token`) and its env variable. */
export interface KeySource {
  provider: string;
  key: "api_key" | "token";
  /** The provider's usual variable, e.g. `TAVILY_API_KEY`. */
  env: string;
}

/**
 * The entry's key (`api_key` through the context's `apiKey`, upstream's `token` read here), else the environment
 * variable's; `undefined` when neither is set (blank counts as unset). Trimmed.
 */
export function optionalKey(ctx: ProviderCallContext, src: KeySource): string | undefined {
  if (src.key === "api_key") return ctx.apiKey(src.env)?.trim() || undefined;
  const fromEntry = ctx.entry[src.key];
  if (typeof fromEntry === "string" && fromEntry.trim()) return fromEntry.trim();
  return readProviderEnv(src.env)?.trim() || undefined;
}

/**
 * The credential a hosted provider cannot work without.
 * @throws WebProviderError naming the entry key and the env variable to set.
 */
export function requireKey(ctx: ProviderCallContext, src: KeySource): string {
  const key = optionalKey(ctx, src);
  if (key) return key;
  throw new WebProviderError(src.provider, `no API key: set ${src.key} in the ${ctx.entry.name} entry of config.yaml or the ${src.env} environment variable`, "no_key");
}

/**
 * The entry's `base_url` (the API root, trailing slashes dropped), else `fallback`. Operator configuration, so not
 * screened by the SSRF guard; only its form is checked.
 * @throws WebProviderError when it is not an http(s) URL.
 */
export function baseUrl(ctx: ProviderCallContext, provider: string, fallback: string): string {
  const raw = ctx.entry.base_url;
  const value = typeof raw === "string" && raw.trim() ? raw.trim() : fallback;
  if (!/^https?:\/\/[^/]/i.test(value)) throw new WebProviderError(provider, "base_url must be an http(s) URL", "invalid_input");
  return value.replace(/\/+$/, "");
}

/**
 * Seconds from the first of `keys` present on the entry, else `fallbackS`. Upstream's coercion: numbers and numeric
 * strings count; booleans (`timeout: off`), other text and values <= 0 fall back rather than time out every call.
 */
export function entrySeconds(ctx: ProviderCallContext, keys: readonly string[], fallbackS: number): number {
  for (const key of keys) {
    if (!(key in ctx.entry)) continue;
    const value = ctx.entry[key];
    const n = typeof value === "number" ? value : typeof value === "string" && value.trim() ? Number(value) : NaN;
    return Number.isFinite(n) && n > 0 ? n : fallbackS;
  }
  return fallbackS;
}

/** An integer entry value (number or numeric text), else `fallback`; booleans do not count. */
export function entryInt(ctx: ProviderCallContext, key: string, fallback: number): number {
  const value = ctx.entry[key];
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() ? Number(value) : NaN;
  return Number.isInteger(n) ? n : fallback;
}

/** A boolean entry value (`true`/`false`, or yes/no/on/off/1/0 text as upstream's `_as_bool`), else `fallback`. */
export function entryBool(ctx: ProviderCallContext, key: string, fallback: boolean): boolean {
  const value = ctx.entry[key];
  if (typeof value === "boolean") return value;
  if (typeof value === "string") {
    const v = value.trim().toLowerCase();
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
  }
  return fallback;
}

/** A non-empty string entry value, else `undefined`. */
export function entryString(ctx: ProviderCallContext, key: string): string | undefined {
  const value = ctx.entry[key];
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

/** `n` within 1..cap (a count below 1 becomes 1). */
export function clampCount(n: number, cap: number): number {
  return Math.max(1, Math.min(Math.floor(n) || 1, cap));
}

/** The reason given when the tool's own signal (its timeout, or the run's cancellation) stopped the call. */
export const CANCELLED = "request cancelled (tool timeout or run cancelled)";

/** Text for an HTTP status a provider answered: the status plus the usual cause, so the model knows what to do. */
export function statusReason(status: number): string {
  if (status === 401 || status === 403) return `HTTP ${status} (the API key was refused)`;
  if (status === 429) return "HTTP 429 (rate limited or out of credits; try again later)";
  if (status >= 500) return `HTTP ${status} (the service failed)`;
  return `HTTP ${status}`;
}

/** The metrics class of an HTTP status a provider answered. */
export function statusClass(status: number): WebFailureReason {
  return status === 429 ? "rate_limited" : "http_error";
}

/** Options of {@link sendProviderRequest}. */
export interface ProviderRequest {
  provider: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Client-side deadline in seconds, on top of the tool's own signal. */
  timeoutS: number;
  /** Secrets to blank out of any text echoed into an error. */
  secrets?: readonly (string | undefined)[];
}

/**
 * Sends one request with `ctx.fetch` under `ctx.signal` and the request's own deadline, and returns the response
 * when it is 2xx.
 * @throws WebProviderError: `timed out after Ns`, `request cancelled`, `request failed (<cause>)` or an HTTP status.
 */
export async function sendProviderRequest(ctx: ProviderCallContext, url: string, req: ProviderRequest): Promise<Response> {
  const deadline = AbortSignal.timeout(Math.max(1, Math.round(req.timeoutS * 1000)));
  const headers: Record<string, string> = { accept: "application/json", ...req.headers };
  if (req.json !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await ctx.fetch(url, {
      method: req.method ?? (req.json === undefined ? "GET" : "POST"),
      headers,
      body: req.json === undefined ? undefined : JSON.stringify(req.json),
      signal: AbortSignal.any([ctx.signal, deadline]),
    });
  } catch (err) {
    throw transportError(req, deadline, ctx.signal, err);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new WebProviderError(req.provider, statusReason(res.status), statusClass(res.status));
  }
  return res;
}

/** The error for a request that got no response: whose deadline fired, or the network cause (no URL, no key). */
function transportError(req: ProviderRequest, deadline: AbortSignal, outer: AbortSignal, err: unknown): WebProviderError {
  if (deadline.aborted) return new WebProviderError(req.provider, `request timed out after ${req.timeoutS}s`, "timeout");
  if (outer.aborted) return new WebProviderError(req.provider, CANCELLED, "timeout");
  const cause = (err as { cause?: { code?: string } })?.cause?.code ?? (err as Error)?.name ?? "network error";
  return new WebProviderError(req.provider, `request failed (${redact(String(cause), req.secrets)})`, "network");
}

/**
 * {@link sendProviderRequest}, then the body read as JSON.
 * @throws WebProviderError as above, or `returned invalid JSON` / `timed out` while reading the body.
 */
export async function callProviderJson(ctx: ProviderCallContext, url: string, req: ProviderRequest): Promise<unknown> {
  const res = await sendProviderRequest(ctx, url, req);
  const text = await readBody(res, req, ctx);
  try {
    return JSON.parse(text);
  } catch {
    throw new WebProviderError(req.provider, "returned invalid JSON");
  }
}

/** The body as text; a body cut off by a deadline or a dropped connection is reported as such. */
export async function readBody(res: Response, req: ProviderRequest, ctx: ProviderCallContext): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    if (ctx.signal.aborted) throw new WebProviderError(req.provider, CANCELLED, "timeout");
    const timedOut = (err as Error)?.name === "TimeoutError" || (err as Error)?.name === "AbortError";
    if (timedOut) throw new WebProviderError(req.provider, `request timed out after ${req.timeoutS}s`, "timeout");
    throw new WebProviderError(req.provider, "response body could not be read", "network");
  }
}

/** `text` with every secret replaced by `***` (secrets under 8 characters are no real keys and would mangle words). */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 8) out = out.split(s).join("***");
  return out;
}

/** `value` when it is a plain object, else `undefined` (for walking untrusted JSON). */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A string field of untrusted JSON, else `""`. */
export function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/**
 * The list at `obj[field]`: `[]` when the field is absent or null (APIs say "no results" that way), plain objects only.
 * @throws WebProviderError `returned an unexpected response format` when it is something else.
 */
export function listField(provider: string, obj: unknown, field: string): Record<string, unknown>[] {
  const rec = asRecord(obj);
  if (!rec) throw new WebProviderError(provider, "returned an unexpected response format");
  const items = rec[field];
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new WebProviderError(provider, "returned an unexpected response format");
  return items.filter((i): i is Record<string, unknown> => asRecord(i) !== undefined);
}

/** `url` when it is an http(s) URL, else `""` (image URLs from a search index go to the web app as they are). */
export function httpUrlOrEmpty(value: unknown): string {
  const url = str(value).trim();
  return /^https?:\/\/[^\s]+$/i.test(url) ? url : "";
}

/**
 * Settles with `work`, or rejects when `ctx.signal` aborts or `timeoutS` passes first. For SDK clients that take no
 * AbortSignal: the caller stops waiting at once; the client's socket lives on until its own timeout or the answer.
 * @throws WebProviderError `request timed out after Ns` / `request cancelled (...)`.
 */
export async function withDeadline<T>(ctx: ProviderCallContext, provider: string, timeoutS: number, work: Promise<T>): Promise<T> {
  const deadline = AbortSignal.timeout(Math.max(1, Math.round(timeoutS * 1000)));
  const both = AbortSignal.any([ctx.signal, deadline]);
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () =>
      reject(new WebProviderError(provider, deadline.aborted ? `request timed out after ${timeoutS}s` : CANCELLED, "timeout"));
    if (both.aborted) onAbort();
    else both.addEventListener("abort", onAbort, { once: true });
  });
  work.catch(() => undefined); // a late rejection after the deadline is not an unhandled one
  try {
    return await Promise.race([work, aborted]);
  } finally {
    both.removeEventListener("abort", onAbort);
  }
}
