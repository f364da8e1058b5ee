// Tavily (search and extract): DeerFlow community/tavily/tools.py. Through the official client @tavily/core
// (`apiBaseURL` for base_url, a per-call `timeout` in seconds that aborts its axios request), loaded on first use so
// a gateway without a Tavily entry does not pay its ~0.5 s import.
import type { TavilyClient } from "@tavily/core";
import { baseUrl, clampCount, entrySeconds, entryString, redact, requireKey, withDeadline, WebProviderError, statusReason, statusClass, type KeySource } from "../../provider-http.js";
import type { FetchedPage, ProviderCallContext, WebFetchProvider, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "Tavily";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "TAVILY_API_KEY" };
/** Tavily's public API root. */
export const TAVILY_BASE_URL = "https://api.tavily.com";
/** Tavily's `max_results` goes up to 20. */
export const TAVILY_MAX_RESULTS = 20;

let sdk: Promise<typeof import("@tavily/core")> | undefined;

/** A client for this call's key and base_url (cheap: the SDK keeps no connection state of its own). */
async function client(ctx: ProviderCallContext): Promise<{ tv: TavilyClient; key: string; timeoutS: number }> {
  const key = requireKey(ctx, KEY);
  const apiBaseURL = baseUrl(ctx, PROVIDER, TAVILY_BASE_URL);
  sdk ??= import("@tavily/core");
  const { tavily } = await sdk;
  return { tv: tavily({ apiKey: key, apiBaseURL, clientSource: "deerflow-gateway" }), key, timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30) };
}

/**
 * The SDK's error as one short reason. It reports an API error as the body's `detail.error` text, other statuses as
 * `<status> Error: <body>`, its timeout as `Request timed out...`, and wraps transport and shape failures in
 * `An unexpected error occurred ... Error: <inner>`.
 */
function sdkError(err: unknown, key: string, timeoutS: number): WebProviderError {
  if (err instanceof WebProviderError) return err;
  const msg = redact(err instanceof Error ? err.message : String(err), [key]);
  if (/timed out/i.test(msg)) return new WebProviderError(PROVIDER, `request timed out after ${timeoutS}s`, "timeout");
  const status = /^(\d{3}) Error:/.exec(msg);
  if (status) return new WebProviderError(PROVIDER, statusReason(Number(status[1])), statusClass(Number(status[1])));
  const code = /\b(E[A-Z]{4,}|ERR_[A-Z_]+)\b/.exec(msg)?.[1];
  if (code || /AxiosError/.test(msg)) return new WebProviderError(PROVIDER, `request failed (${code ?? "network error"})`, "network");
  if (/TypeError|SyntaxError/.test(msg)) return new WebProviderError(PROVIDER, "returned an unexpected response format");
  // the API's own `detail.error` text; Tavily answers 429 with "...rate limit..." or "...usage limit..."
  return new WebProviderError(PROVIDER, msg.slice(0, 200), /rate|limit/i.test(msg) ? "rate_limited" : "http_error");
}

/**
 * `web_search` via Tavily: `results[]` as `{title, url, snippet: content, score}`, at most 20. Entry keys:
 * `search_depth` (basic | advanced | fast | ultra-fast), `topic` (general | news | finance), `search_time_range`
 * (day | week | month | year), `region` (Tavily's `country`), `timeout` (30 s).
 */
export const tavilySearch: WebSearchProvider = {
  name: "tavily",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const { tv, key, timeoutS } = await client(ctx);
    const options: Record<string, unknown> = { maxResults: clampCount(maxResults, TAVILY_MAX_RESULTS), timeout: timeoutS };
    const depth = entryString(ctx, "search_depth");
    if (depth) options.searchDepth = depth;
    const topic = entryString(ctx, "topic");
    if (topic) options.topic = topic;
    const range = entryString(ctx, "search_time_range") ?? entryString(ctx, "time_range");
    if (range) options.timeRange = range;
    const country = entryString(ctx, "region");
    if (country) options.country = country;
    try {
      const res = await withDeadline(ctx, PROVIDER, timeoutS + 1, tv.search(query, options));
      if (!Array.isArray(res?.results)) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
      return res.results.slice(0, clampCount(maxResults, TAVILY_MAX_RESULTS)).map((r) => ({ title: r.title ?? "", url: r.url ?? "", snippet: r.content ?? "", score: r.score }));
    } catch (err) {
      throw sdkError(err, key, timeoutS);
    }
  },
};

/**
 * `web_fetch` via Tavily extract: `{markdown: raw_content, title}` of the first result; a `failed_results` entry is
 * the error, as upstream. Entry keys: `extract_depth` (basic | advanced), `timeout` (30 s).
 */
export const tavilyFetch: WebFetchProvider = {
  name: "tavily",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const { tv, key, timeoutS } = await client(ctx);
    const options: Record<string, unknown> = { format: "markdown", timeout: timeoutS };
    const depth = entryString(ctx, "extract_depth");
    if (depth) options.extractDepth = depth;
    try {
      const res = await withDeadline(ctx, PROVIDER, timeoutS + 1, tv.extract([url], options));
      const failed = res.failedResults?.[0];
      if (failed) throw new WebProviderError(PROVIDER, `could not extract the page: ${String(failed.error).slice(0, 200)}`);
      const page = res.results?.[0];
      if (!page) throw new WebProviderError(PROVIDER, "no results found");
      return { url: page.url || url, title: page.title || undefined, markdown: page.rawContent ?? "" };
    } catch (err) {
      throw sdkError(err, key, timeoutS);
    }
  },
};
