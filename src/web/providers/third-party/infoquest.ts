// BytePlus InfoQuest (web search, image search, reader): DeerFlow community/infoquest/. Plain fetch against the
// documented JSON APIs (POST search.infoquest.bytepluses.com, POST reader.infoquest.bytepluses.com, Bearer key):
// BytePlus ships no npm client. Search and reader are two hosts, so `base_url` is per entry: the web_search and
// image_search entries point it at the search API, the web_fetch entry at the reader.
import {
  asRecord,
  baseUrl,
  clampCount,
  callProviderJson,
  entryInt,
  entrySeconds,
  entryString,
  readBody,
  requireKey,
  sendProviderRequest,
  str,
  WebProviderError,
  type KeySource,
} from "../../provider-http.js";
import type { FetchedPage, ImageHit, ImageSearchProvider, ProviderCallContext, WebFetchProvider, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "InfoQuest";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "INFOQUEST_API_KEY" };
/** InfoQuest's public search API. */
export const INFOQUEST_SEARCH_URL = "https://search.infoquest.bytepluses.com";
/** InfoQuest's public reader (fetch) API. */
export const INFOQUEST_READER_URL = "https://reader.infoquest.bytepluses.com";
/** InfoQuest returns one page of results without a count parameter; we keep at most 20. */
export const INFOQUEST_MAX_RESULTS = 20;

/** POSTs a search body and returns `search_result.results[].content.results` (one record per result block). */
async function infoquestSearch(body: Record<string, unknown>, ctx: ProviderCallContext): Promise<Record<string, unknown>[]> {
  const key = requireKey(ctx, KEY);
  const site = entryString(ctx, "site");
  if (site) body.site = site;
  const data = asRecord(
    await callProviderJson(ctx, baseUrl(ctx, PROVIDER, INFOQUEST_SEARCH_URL), {
      provider: PROVIDER,
      headers: { authorization: `Bearer ${key}` },
      json: { format: "JSON", ...body },
      timeoutS: entrySeconds(ctx, ["timeout_s", "timeout"], 30),
      secrets: [key],
    }),
  );
  const blocks = asRecord(data?.search_result)?.results;
  if (!Array.isArray(blocks)) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
  return blocks.map((b) => asRecord(asRecord(asRecord(b)?.content)?.results) ?? {});
}

/** Organic results then top stories, deduplicated by URL, as upstream's clean_results (`type` kept as an extra). */
function webHits(blocks: Record<string, unknown>[]): WebSearchHit[] {
  const seen = new Set<string>();
  const hits: WebSearchHit[] = [];
  const add = (hit: WebSearchHit) => {
    if (!hit.url || seen.has(hit.url)) return;
    seen.add(hit.url);
    hits.push(hit);
  };
  for (const block of blocks) {
    for (const r of Array.isArray(block.organic) ? block.organic : []) {
      const rec = asRecord(r) ?? {};
      add({ title: str(rec.title), url: str(rec.url), snippet: str(rec.desc), type: "page" });
    }
    const stories = asRecord(block.top_stories)?.items;
    for (const r of Array.isArray(stories) ? stories : []) {
      const rec = asRecord(r) ?? {};
      if (str(rec.title)) add({ title: str(rec.title), url: str(rec.url), snippet: str(rec.source), type: "news", time_frame: rec.time_frame ?? null });
    }
  }
  return hits;
}

/** `web_search` via InfoQuest. Entry keys: `search_time_range` (days; -1 off), `site`, `timeout_s`. */
export const infoquestWebSearch: WebSearchProvider = {
  name: "infoquest",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const body: Record<string, unknown> = { query };
    const range = entryInt(ctx, "search_time_range", -1);
    if (range > 0) body.time_range = range;
    return webHits(await infoquestSearch(body, ctx)).slice(0, clampCount(maxResults, INFOQUEST_MAX_RESULTS));
  },
};

/**
 * `image_search` via InfoQuest (`search_type: "Images"`): `images_results[]` as `{title, image_url: original,
 * thumbnail_url: thumbnail or original, source_url: link}`, deduplicated. Entry keys: `image_search_time_range`
 * (1-365 days), `image_size` (`l`, `m`, `i`; default `i` as upstream), `site`.
 */
export const infoquestImages: ImageSearchProvider = {
  name: "infoquest",
  async searchImages(query, maxResults, ctx): Promise<ImageHit[]> {
    const body: Record<string, unknown> = { query, search_type: "Images" };
    const range = entryInt(ctx, "image_search_time_range", -1);
    if (range >= 1 && range <= 365) body.time_range = range;
    const size = entryString(ctx, "image_size") ?? "i";
    if (["l", "m", "i"].includes(size)) body.image_size = size;
    const seen = new Set<string>();
    const hits: ImageHit[] = [];
    for (const block of await infoquestSearch(body, ctx)) {
      for (const r of Array.isArray(block.images_results) ? block.images_results : []) {
        const rec = asRecord(r) ?? {};
        const original = str(rec.original);
        if (!original || seen.has(original)) continue;
        seen.add(original);
        hits.push({ title: str(rec.title), image_url: original, thumbnail_url: str(rec.thumbnail) || original, source_url: str(rec.link) });
      }
    }
    return hits.slice(0, clampCount(maxResults, INFOQUEST_MAX_RESULTS));
  },
};

/**
 * `web_fetch` via the InfoQuest reader (`format: "HTML"`): the page's HTML from `reader_result` (or `content`, or
 * the body itself when it is not JSON), for the shared extractor. Entry keys, sent on as upstream (seconds, -1
 * off): `timeout`, `fetch_time`, `navigation_timeout`; the call itself waits `timeout` + `fetch_time` + 10 s.
 */
export const infoquestFetch: WebFetchProvider = {
  name: "infoquest",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const key = requireKey(ctx, KEY);
    const body: Record<string, unknown> = { url, format: "HTML" };
    const timeout = entryInt(ctx, "timeout", -1);
    const fetchTime = entryInt(ctx, "fetch_time", -1);
    const nav = entryInt(ctx, "navigation_timeout", -1);
    if (fetchTime > 0) body.fetch_time = fetchTime;
    if (timeout > 0) body.timeout = timeout;
    if (nav > 0) body.navi_timeout = nav;
    const req = { provider: PROVIDER, headers: { authorization: `Bearer ${key}` }, json: body, secrets: [key], timeoutS: Math.max(timeout, 20) + Math.max(fetchTime, 0) + 10 };
    const res = await sendProviderRequest(ctx, baseUrl(ctx, PROVIDER, INFOQUEST_READER_URL), req);
    const text = await readBody(res, req, ctx);
    if (!text.trim()) throw new WebProviderError(PROVIDER, "no result found");
    let html = text;
    try {
      const data = asRecord(JSON.parse(text));
      html = str(data?.reader_result) || str(data?.content);
      if (!html) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
    } catch (err) {
      if (err instanceof WebProviderError) throw err;
      // Not JSON: upstream hands the body on as the page itself.
    }
    return { url, html };
  },
};
