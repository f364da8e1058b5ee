// Firecrawl (search and scrape): DeerFlow community/firecrawl/tools.py. Plain fetch against the documented v2 REST
// API (POST /v2/search, POST /v2/scrape, Bearer key): every @mendable/firecrawl-js release (1.29 to 4.42) declares
// engines.node >= 22, and this gateway runs on Node 20.
import {
  asRecord,
  baseUrl,
  callProviderJson,
  clampCount,
  entryInt,
  entrySeconds,
  entryString,
  listField,
  requireKey,
  str,
  WebProviderError,
  type KeySource,
} from "../../provider-http.js";
import type { FetchedPage, ProviderCallContext, WebFetchProvider, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "Firecrawl";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "FIRECRAWL_API_KEY" };
/** Firecrawl's public API root. */
export const FIRECRAWL_BASE_URL = "https://api.firecrawl.dev";
/** Firecrawl's search `limit` goes up to 100. */
export const FIRECRAWL_MAX_RESULTS = 100;

/** POSTs `body` to `<base_url>/v2/<endpoint>` and returns the body's `data` after checking `success`. */
async function firecrawlPost(endpoint: string, body: Record<string, unknown>, ctx: ProviderCallContext): Promise<unknown> {
  const key = requireKey(ctx, KEY);
  const data = asRecord(
    await callProviderJson(ctx, `${baseUrl(ctx, PROVIDER, FIRECRAWL_BASE_URL)}/v2/${endpoint}`, {
      provider: PROVIDER,
      headers: { authorization: `Bearer ${key}` },
      json: body,
      timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 60),
      secrets: [key],
    }),
  );
  if (!data) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
  if (data.success === false) throw new WebProviderError(PROVIDER, `reported failure${typeof data.error === "string" ? `: ${data.error.slice(0, 200)}` : ""}`);
  return data.data;
}

/** `web_search` via Firecrawl: `data.web[]` as `{title, url, snippet: description}`. Entry keys: `tbs`, `location`. */
export const firecrawlSearch: WebSearchProvider = {
  name: "firecrawl",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const limit = clampCount(maxResults, FIRECRAWL_MAX_RESULTS);
    const body: Record<string, unknown> = { query, limit };
    for (const k of ["tbs", "location"] as const) {
      const v = entryString(ctx, k);
      if (v) body[k] = v;
    }
    const data = await firecrawlPost("search", body, ctx);
    return listField(PROVIDER, data ?? {}, "web")
      .slice(0, limit)
      .map((r) => ({ title: str(r.title), url: str(r.url), snippet: str(r.description) }));
  },
};

/**
 * `web_fetch` via Firecrawl scrape (`formats: ["markdown"]`): `{markdown, title: metadata.title}`; empty Markdown
 * is an error as upstream. Entry keys: `only_main_content` (true), `wait_for_ms`.
 */
export const firecrawlFetch: WebFetchProvider = {
  name: "firecrawl",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const body: Record<string, unknown> = { url, formats: ["markdown"], onlyMainContent: ctx.entry.only_main_content !== false };
    const waitFor = entryInt(ctx, "wait_for_ms", 0);
    if (waitFor > 0) body.waitFor = waitFor;
    const data = asRecord(await firecrawlPost("scrape", body, ctx));
    const markdown = str(data?.markdown);
    if (!markdown.trim()) throw new WebProviderError(PROVIDER, "no content found");
    const meta = asRecord(data?.metadata) ?? {};
    return { url: str(meta.sourceURL) || url, title: str(meta.title) || "Untitled", markdown };
  },
};
