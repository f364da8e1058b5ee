// Brave Search API (web and images): DeerFlow community/brave/tools.py. Plain fetch against the documented REST API
// (GET /res/v1/web/search and /res/v1/images/search, `X-Subscription-Token` header): Brave ships no npm client.
import {
  asRecord,
  baseUrl,
  callProviderJson,
  clampCount,
  entrySeconds,
  entryString,
  httpUrlOrEmpty,
  listField,
  requireKey,
  str,
  type KeySource,
} from "../../provider-http.js";
import type { ImageHit, ImageSearchProvider, ProviderCallContext, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "Brave Search";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "BRAVE_SEARCH_API_KEY" };
/** Brave's public API root. */
export const BRAVE_BASE_URL = "https://api.search.brave.com";
/** Brave caps web search `count` at 20. */
export const BRAVE_WEB_MAX_RESULTS = 20;
/** Brave Image Search takes up to 200. */
export const BRAVE_IMAGE_MAX_RESULTS = 200;
/** Upstream trims the query to 400 characters. */
const MAX_QUERY_CHARS = 400;
/** Entry keys passed through as query parameters (upstream's image keys; `freshness` for web). */
const PASS_THROUGH = ["country", "search_lang", "safesearch", "spellcheck", "freshness"] as const;

/** GETs `<base_url>/res/v1/<kind>/search?q&count&...` and returns the parsed body. */
async function braveGet(kind: "web" | "images", query: string, count: number, ctx: ProviderCallContext): Promise<unknown> {
  const key = requireKey(ctx, KEY);
  const params = new URLSearchParams({ q: query.trim().slice(0, MAX_QUERY_CHARS), count: String(count) });
  if (kind === "web") params.set("text_decorations", "false");
  for (const name of PASS_THROUGH) {
    const value = entryString(ctx, name);
    if (value) params.set(name, value);
  }
  // `region` is the gateway-wide name of what Brave calls `country`.
  const region = entryString(ctx, "region");
  if (region && !params.has("country")) params.set("country", region);
  return callProviderJson(ctx, `${baseUrl(ctx, PROVIDER, BRAVE_BASE_URL)}/res/v1/${kind}/search?${params}`, {
    provider: PROVIDER,
    headers: { "x-subscription-token": key },
    timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30),
    secrets: [key],
  });
}

/** `web_search` via Brave: `web.results[]` as `{title, url, snippet: description}`, at most 20. */
export const braveSearch: WebSearchProvider = {
  name: "brave",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const count = clampCount(maxResults, BRAVE_WEB_MAX_RESULTS);
    const data = await braveGet("web", query, count, ctx);
    const web = asRecord(data)?.web ?? {};
    return listField(PROVIDER, web, "results")
      .slice(0, count)
      .map((r) => ({ title: str(r.title), url: str(r.url), snippet: str(r.description) }));
  },
};

/**
 * `image_search` via Brave: `results[]` as `{title, image_url: properties.url, thumbnail_url: thumbnail.src,
 * source_url: url}` (plus `source`, `width`, `height` as upstream), at most 200, http(s) URLs only.
 */
export const braveImages: ImageSearchProvider = {
  name: "brave",
  async searchImages(query, maxResults, ctx): Promise<ImageHit[]> {
    const count = clampCount(maxResults, BRAVE_IMAGE_MAX_RESULTS);
    const data = await braveGet("images", query, count, ctx);
    const hits: ImageHit[] = [];
    for (const r of listField(PROVIDER, data, "results")) {
      const props = asRecord(r.properties) ?? {};
      const thumbRec = asRecord(r.thumbnail) ?? {};
      const image = httpUrlOrEmpty(props.url);
      const thumb = httpUrlOrEmpty(thumbRec.src);
      const imageUrl = image || (props.url ? "" : thumb);
      const thumbnailUrl = thumb || (thumbRec.src ? "" : image);
      if (!imageUrl && !thumbnailUrl) continue;
      const dims = image ? props : thumbRec;
      hits.push(Object.assign(
        { title: str(r.title), image_url: imageUrl, thumbnail_url: thumbnailUrl, source_url: httpUrlOrEmpty(r.url) },
        { source: str(r.source), width: dims.width ?? null, height: dims.height ?? null },
      ));
      if (hits.length >= count) break;
    }
    return hits;
  },
};
