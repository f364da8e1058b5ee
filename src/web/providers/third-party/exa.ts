// Exa (neural search and page contents): DeerFlow community/exa/tools.py. Through the official client exa-js
// (`new Exa(key, baseURL)`), loaded on first use. The client takes no AbortSignal and no timeout, so a call is
// raced against the tool's signal and the entry's timeout (see withDeadline).
import type { Exa as ExaClient } from "exa-js";
import { baseUrl, clampCount, entryInt, entrySeconds, entryString, redact, requireKey, statusReason, statusClass, withDeadline, WebProviderError, type KeySource } from "../../provider-http.js";
import type { FetchedPage, ProviderCallContext, WebFetchProvider, WebSearchHit, WebSearchProvider } from "../../types.js";

const PROVIDER = "Exa";
const KEY: KeySource = { provider: PROVIDER, key: "api_key", env: "EXA_API_KEY" };
/** Exa's public API root. */
export const EXA_BASE_URL = "https://api.exa.ai";
/** Exa's `numResults` goes up to 100. */
export const EXA_MAX_RESULTS = 100;
/** Upstream's page text cap for web_fetch (characters). */
const FETCH_MAX_CHARACTERS = 4096;

let sdk: Promise<typeof ExaClient> | undefined;

/** A client for this call's key and base_url. */
async function client(ctx: ProviderCallContext): Promise<{ exa: ExaClient; key: string; timeoutS: number }> {
  const key = requireKey(ctx, KEY);
  const root = baseUrl(ctx, PROVIDER, EXA_BASE_URL);
  sdk ??= import("exa-js").then((m) => m.Exa);
  const Exa = await sdk;
  return { exa: new Exa(key, root), key, timeoutS: entrySeconds(ctx, ["timeout", "timeout_s"], 30) };
}

/** The client's error as one short reason: its `statusCode` when it has one, else the transport cause. */
function sdkError(err: unknown, key: string): WebProviderError {
  if (err instanceof WebProviderError) return err;
  const status = (err as { statusCode?: unknown })?.statusCode;
  const msg = redact(err instanceof Error ? err.message : String(err), [key]);
  if (typeof status === "number" && status >= 400) return new WebProviderError(PROVIDER, statusReason(status), statusClass(status));
  if (/non-JSON|not valid JSON/i.test(msg)) return new WebProviderError(PROVIDER, "returned invalid JSON");
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  if (err instanceof TypeError) return code ? new WebProviderError(PROVIDER, `request failed (${code})`, "network") : new WebProviderError(PROVIDER, "returned an unexpected response format");
  return new WebProviderError(PROVIDER, msg.slice(0, 200));
}

/**
 * `web_search` via Exa: `results[]` as `{title, url, snippet: highlights joined by newlines}`, at most 100. Entry
 * keys as upstream: `search_type` (auto | neural | keyword | fast, default auto), `contents_max_characters` (1000,
 * per result's highlights), `timeout` (30 s).
 */
export const exaSearch: WebSearchProvider = {
  name: "exa",
  async search(query, maxResults, ctx): Promise<WebSearchHit[]> {
    const { exa, key, timeoutS } = await client(ctx);
    const count = clampCount(maxResults, EXA_MAX_RESULTS);
    const options = {
      type: (entryString(ctx, "search_type") ?? "auto") as "auto",
      numResults: count,
      contents: { highlights: { maxCharacters: entryInt(ctx, "contents_max_characters", 1000) } },
    };
    try {
      const res = await withDeadline(ctx, PROVIDER, timeoutS, exa.search(query, options));
      if (!Array.isArray(res?.results)) throw new WebProviderError(PROVIDER, "returned an unexpected response format");
      return res.results.slice(0, count).map((r) => {
        const highlights = (r as { highlights?: unknown }).highlights;
        return { title: r.title ?? "", url: r.url ?? "", snippet: Array.isArray(highlights) ? highlights.join("\n") : "" };
      });
    } catch (err) {
      throw sdkError(err, key);
    }
  },
};

/** `web_fetch` via Exa contents (`text.maxCharacters: 4096` as upstream): `{markdown: text, title}` of the first result. */
export const exaFetch: WebFetchProvider = {
  name: "exa",
  async fetchPage(url, ctx): Promise<FetchedPage> {
    const { exa, key, timeoutS } = await client(ctx);
    try {
      const res = await withDeadline(ctx, PROVIDER, timeoutS, exa.getContents([url], { text: { maxCharacters: FETCH_MAX_CHARACTERS } }));
      const page = Array.isArray(res?.results) ? res.results[0] : undefined;
      if (!page) throw new WebProviderError(PROVIDER, "no results found");
      return { url: page.url || url, title: page.title || "Untitled", markdown: String((page as { text?: unknown }).text ?? "") };
    } catch (err) {
      throw sdkError(err, key);
    }
  },
};
