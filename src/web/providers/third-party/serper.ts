// Serper (Google Search and Google Images as JSON): DeerFlow community/serper/tools.py. Plain fetch against
// https://serper.dev's documented API (POST /search and /images, `X-API-KEY` header): Serper ships no npm client.
import {
  callProviderJson,
  clampCount,
  baseUrl,
  entrySeconds,
  entryString,
  httpUrlOrEmpty,
  listField,
  requireKey,
  str,
  type KeySource,
} from "../../provider-http.js";
import type { ImageHit, ImageSearchProvider, ProviderCallContext, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "Serper";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "SERPER_API_KEY" };
/** Serper's public API root. */
export const SERPER_BASE_URL = "https://google.serper.dev";
/** Upstream caps `num` at 10 for both web and image search. */
export const SERPER_MAX_RESULTS = 10;
/** Upstream trims the query to 500 characters before sending it. */
const MAX_QUERY_CHARS = 500;

/** POSTs `{q, num, gl?, hl?, tbs?}` to `<base_url>/<endpoint>` and returns the parsed body. */
async function serperPost(endpoint: string, query: string, maxResults: number, ctx: ProviderCallContext): Promise<unknown> {
  const key = requireKey(ctx, KEY);
  const body: Record<string, unknown> = { q: query.trim().slice(0, MAX_QUERY_CHARS), num: clampCount(maxResults, SERPER_MAX_RESULTS) };
  // `region` is the gateway-wide name; Serper calls the country `gl` and the language `hl`.
  const gl = entryString(ctx, "gl") ?? entryString(ctx, "region");
  if (gl) body.gl = gl;
  const hl = entryString(ctx, "hl");
  if (hl) body.hl = hl;
  const tbs = entryString(ctx, "tbs");
  if (tbs) body.tbs = tbs;
  return callProviderJson(ctx, `${baseUrl(ctx, PROVIDER, SERPER_BASE_URL)}/${endpoint}`, {
    provider: PROVIDER,
    headers: { "x-api-key": key },
    json: body,
    timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30),
    secrets: [key],
  });
}

/** `web_search` via Serper: `organic[]` as `{title, url: link, snippet}`, at most 10. */
export const serperSearch: WebSearchProvider = {
  name: "serper",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const data = await serperPost("search", query, maxResults, ctx);
    const count = clampCount(maxResults, SERPER_MAX_RESULTS);
    return listField(PROVIDER, data, "organic")
      .slice(0, count)
      .map((r) => ({ title: str(r.title), url: str(r.link), snippet: str(r.snippet) }));
  },
};

/**
 * `image_search` via Serper: `images[]` as `{title, image_url: imageUrl, thumbnail_url: thumbnailUrl, source_url: link}`.
 * As upstream, a result keeps only http(s) URLs and one of image/thumbnail stands in for the other only when absent.
 */
export const serperImages: ImageSearchProvider = {
  name: "serper",
  async searchImages(query, maxResults, ctx): Promise<ImageHit[]> {
    const data = await serperPost("images", query, maxResults, ctx);
    const hits: ImageHit[] = [];
    for (const r of listField(PROVIDER, data, "images")) {
      const image = httpUrlOrEmpty(r.imageUrl);
      const thumb = httpUrlOrEmpty(r.thumbnailUrl);
      const imageUrl = image || (r.imageUrl ? "" : thumb);
      const thumbnailUrl = thumb || (r.thumbnailUrl ? "" : image);
      if (!imageUrl && !thumbnailUrl) continue;
      hits.push({ title: str(r.title), image_url: imageUrl, thumbnail_url: thumbnailUrl, source_url: httpUrlOrEmpty(r.link) });
      if (hits.length >= clampCount(maxResults, SERPER_MAX_RESULTS)) break;
    }
    return hits;
  },
};
