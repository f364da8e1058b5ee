// Crawl4AI (self-hosted headless Chromium returning Markdown): DeerFlow community/crawl4ai/. Plain fetch against
// the Docker server's documented POST /md endpoint: Crawl4AI is a Python library and ships no npm client.
import { asRecord, baseUrl, callProviderJson, entrySeconds, entryString, optionalKey, str, WebProviderError, type KeySource } from "../../provider-http.js";
import type { FetchedPage, WebFetchProvider } from "../../types.js";

const PROVIDER = "Crawl4AI";
/** The token is optional (servers before 0.9 take none); `token:` as upstream, else CRAWL4AI_API_TOKEN. */
const KEY: KeySource = { provider: PROVIDER, key: "token", env: "CRAWL4AI_API_TOKEN" };
/** Upstream's default server address (self-hosted; no public endpoint). */
export const CRAWL4AI_BASE_URL = "http://localhost:11235";
/** Crawl4AI's Markdown filters (`f`). */
export const CRAWL4AI_FILTERS = ["fit", "raw", "bm25", "llm"] as const;

/**
 * `web_fetch` via Crawl4AI: POST `<base_url>/md` `{url, f: filter}` with `Authorization: Bearer <token>` when one is
 * set; answers `{success, markdown}`. Entry keys: `base_url`, `token`, `timeout` (30 s; `timeout_s` accepted),
 * `filter` (fit | raw | bm25 | llm, default fit).
 * @throws WebProviderError for an unknown filter, a failed crawl (`success: false`) or empty Markdown.
 */
export const crawl4aiFetch: WebFetchProvider = {
  name: "crawl4ai",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const filter = (entryString(ctx, "filter") ?? "fit").toLowerCase();
    if (!(CRAWL4AI_FILTERS as readonly string[]).includes(filter)) {
      throw new WebProviderError(PROVIDER, `filter must be one of ${CRAWL4AI_FILTERS.join(", ")}`, "invalid_input");
    }
    const token = optionalKey(ctx, KEY);
    const data = asRecord(
      await callProviderJson(ctx, `${baseUrl(ctx, PROVIDER, CRAWL4AI_BASE_URL)}/md`, {
        provider: PROVIDER,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        json: { url, f: filter },
        timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30),
        secrets: [token],
      }),
    );
    if (!data) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
    if (data.success !== true) throw new WebProviderError(PROVIDER, "reported failure for the page");
    const markdown = str(data.markdown);
    if (!markdown.trim()) throw new WebProviderError(PROVIDER, "returned empty markdown");
    return { url, markdown };
  },
};
