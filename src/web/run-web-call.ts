// The one path every research tool call takes, whatever the provider: find the tool's config entry in the run's
// AppConfig (as upstream's get_tool_config does at call time), pick the provider from the catalog by the entry's
// `use:`, answer from the cache when it can, else call the provider under the entry's timeout, and turn every
// failure into the text `Error: <provider>: <reason>` the model reads (the run goes on). Counts calls, failures,
// latency and cache hits in /metrics (the run scope carries the app's metrics) and logs each provider's failures
// at most once a minute, with the run id.
import { runContextOf } from "../agents/run-context.js";
import type { AppConfig, ToolConfig } from "../config/schema.js";
import { readProviderEnv } from "../config/web-env.js";
import { getLogger } from "../logger.js";
import { currentRunScope } from "../observability/run-scope.js";
import { cacheResult, getCachedResult, webCacheKey } from "./cache.js";
import { DEFAULT_BINDINGS, PROVIDER_CATALOG, type WebToolName } from "./catalog.js";
import { readCapped } from "./ssrf-guard.js";
import type { ProviderBinding, ProviderCallContext } from "./types.js";
import { toWebToolError, WebToolError } from "./web-error.js";

/** Seconds a call may take when its entry sets no `timeout` (upstream's Jina default is 10, DDGS's 30). */
export const DEFAULT_TIMEOUT_SECONDS = 15;
/** Largest response a provider API call may return, in bytes. */
export const PROVIDER_MAX_BYTES = 5 * 1024 * 1024;

type EntryRecord = ToolConfig & Record<string, unknown>;

/** The config entry of `tool`: the one named so, else the first whose `use:` the catalog binds to that tool. */
export function findToolEntry(appConfig: AppConfig | undefined, tool: WebToolName): EntryRecord | undefined {
  const tools = appConfig?.tools ?? [];
  return (tools.find((t) => t.name === tool) ?? tools.find((t) => PROVIDER_CATALOG[t.use]?.tool === tool)) as EntryRecord | undefined;
}

/** The entry's `timeout` in seconds (a positive number or numeric string), else the default. */
function timeoutOf(entry: EntryRecord | undefined): number {
  const t = Number(entry?.timeout);
  return Number.isFinite(t) && t > 0 ? Math.min(t, 300) : DEFAULT_TIMEOUT_SECONDS;
}

/** `fetch` for provider API calls (to operator-configured `base_url`s): the call's signal and the size cap applied. */
function cappedFetch(signal: AbortSignal): typeof globalThis.fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
    const body = await readCapped(res.body, PROVIDER_MAX_BYTES, res.headers.get("content-length"));
    const nullBody = res.status === 204 || res.status === 304;
    return new Response(nullBody ? null : new Uint8Array(body), { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof globalThis.fetch;
}

const lastLogged = new Map<string, number>();
/** Logs a provider failure at most once per provider per minute (a broken provider is one line, not thousands). */
function logFailure(provider: string, tool: string, runId: string | undefined, err: WebToolError): void {
  const now = Date.now();
  if ((lastLogged.get(provider) ?? 0) > now - 60_000) return;
  lastLogged.set(provider, now);
  const log = currentRunScope()?.log ?? getLogger();
  log.warn({ run_id: runId, provider, tool, reason: err.reason }, `research tool ${tool} failed (${provider}): ${err.message}`);
}

/** Rejects with a timeout error after `ms` even when the provider ignores its signal (CPU-bound work). */
function deadline(ms: number, seconds: number): { promise: Promise<never>; clear: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WebToolError("timeout", `timed out after ${seconds} s`)), ms);
  });
  return { promise, clear: () => clearTimeout(timer) };
}

/** What one tool call asks of {@link runWebCall}. */
export interface WebCall<B extends ProviderBinding> {
  tool: B["tool"];
  /** The tool's runnable config (the run context is read from it). */
  config: unknown;
  /** The call's arguments, for the cache key. */
  args: unknown;
  /** Validates the arguments against the entry; returns an error message for the model, or null. */
  validate?: (entry: EntryRecord | undefined) => string | null;
  /** Calls the provider and shapes its answer as the tool's result text. */
  execute: (provider: B["provider"], ctx: ProviderCallContext) => Promise<string>;
  /** Whether a result may be cached (default true). */
  cacheable?: boolean;
}

/**
 * Runs one research tool call (see the file header). Never throws: every failure is the result text
 * `Error: <provider>: <reason>`.
 */
export async function runWebCall<B extends ProviderBinding>(call: WebCall<B>): Promise<string> {
  const view = runContextOf(call.config as never);
  const entry = findToolEntry(view.appConfig, call.tool);
  const binding = entry ? PROVIDER_CATALOG[entry.use] : DEFAULT_BINDINGS[call.tool];
  if (!binding || binding.tool !== call.tool) {
    return `Error: ${call.tool}: no ${call.tool} provider is available for use: '${entry?.use ?? "(none)"}'`;
  }
  const provider = binding.provider.name;
  const metrics = currentRunScope()?.metrics;
  const labels = { tool: call.tool, provider };
  metrics?.webToolCalls.inc(labels);
  const invalid = call.validate?.(entry);
  if (invalid) {
    metrics?.webToolFailures.inc({ ...labels, reason: "invalid_input" });
    return `Error: ${provider}: ${invalid}`;
  }
  const key = webCacheKey(view.userId, call.tool, entry ?? null, call.args);
  const cached = call.cacheable === false ? undefined : getCachedResult(key);
  if (cached !== undefined) {
    metrics?.webToolCacheHits.inc(labels);
    return cached;
  }
  const seconds = timeoutOf(entry);
  const timeout = AbortSignal.timeout(seconds * 1000);
  const runSignal = (call.config as { signal?: AbortSignal } | undefined)?.signal;
  const signal = runSignal ? AbortSignal.any([timeout, runSignal]) : timeout;
  const ctx: ProviderCallContext = {
    entry: (entry ?? { name: call.tool, group: "web", use: "" }) as EntryRecord,
    signal,
    fetch: cappedFetch(signal),
    apiKey: (envVar) => (typeof entry?.api_key === "string" && entry.api_key.trim() ? entry.api_key : readProviderEnv(envVar)),
  };
  const started = performance.now();
  const limit = deadline(seconds * 1000 + 250, seconds);
  try {
    const result = await Promise.race([call.execute(binding.provider as B["provider"], ctx), limit.promise]);
    if (call.cacheable !== false) cacheResult(key, result);
    return result;
  } catch (err) {
    const failure = toWebToolError(err, seconds);
    metrics?.webToolFailures.inc({ ...labels, reason: failure.reason });
    logFailure(provider, call.tool, view.runId, failure);
    return `Error: ${provider}: ${failure.message}`;
  } finally {
    limit.clear();
    metrics?.webToolDuration.observe(labels, (performance.now() - started) / 1000);
  }
}
