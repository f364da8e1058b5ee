// SearXNG (self-hosted metasearch): DeerFlow community/searxng/. Plain fetch against its JSON search API
// (GET /search?format=json; the instance must list `json` under search.formats): there is no npm client.
import { baseUrl, callProviderJson, clampCount, entrySeconds, entryString, listField, str } from "../../provider-http.js";
import type { WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "SearXNG";
/** Upstream's default instance address (no public endpoint: SearXNG is self-hosted). */
export const SEARXNG_BASE_URL = "http://localhost:8088";
/** SearXNG has no count parameter of its own; one results page rarely holds more, so we stop at 20. */
export const SEARXNG_MAX_RESULTS = 20;
/** `safesearch` words to SearXNG's levels. */
const SAFESEARCH: Record<string, string> = { off: "0", moderate: "1", strict: "2", on: "2", "0": "0", "1": "1", "2": "2" };

/**
 * `web_search` via SearXNG: `results[]` as `{title, url, snippet: content}`, at most `max_results`. Entry keys:
 * `base_url`, `max_results`, `timeout` (30 s), `language` (`auto`), `categories`, `safesearch`
 * (off/moderate/strict), `search_time_range` or `time_range` (day/month/year). No key: SearXNG has none.
 */
export const searxngSearch: WebSearchProvider = {
  name: "searxng",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const count = clampCount(maxResults, SEARXNG_MAX_RESULTS);
    const params = new URLSearchParams({ q: query, format: "json", language: entryString(ctx, "language") ?? "auto", pageno: "1" });
    const categories = entryString(ctx, "categories");
    if (categories) params.set("categories", categories);
    const safe = SAFESEARCH[(entryString(ctx, "safesearch") ?? "").toLowerCase()];
    if (safe) params.set("safesearch", safe);
    const range = entryString(ctx, "search_time_range") ?? entryString(ctx, "time_range");
    if (range) params.set("time_range", range);
    const data = await callProviderJson(ctx, `${baseUrl(ctx, PROVIDER, SEARXNG_BASE_URL)}/search?${params}`, {
      provider: PROVIDER,
      headers: { "user-agent": "Mozilla/5.0 (compatible; deerflow-gateway)" },
      timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30),
    });
    return listField(PROVIDER, data, "results")
      .slice(0, count)
      .map((r) => ({ title: str(r.title), url: str(r.url), snippet: str(r.content) }));
  },
};
