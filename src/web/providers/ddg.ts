// DuckDuckGo web and image search, the default providers (no key). DeerFlow's community/ddg_search and
// community/image_search call the `ddgs` Python library; this speaks the same public endpoints directly:
//   web:    POST {base_url}/html/  (form `q`, `kl` region, `kp` safesearch)  -> an HTML result page
//   images: GET  {base_url}/?q=...&iax=images&ia=images                       -> a page holding the `vqd` token
//           GET  {base_url}/i.js?q=...&o=json&l=<region>&p=<safesearch>&vqd=... -> JSON `{results: [...]}`
// `base_url` defaults to https://html.duckduckgo.com (web) and https://duckduckgo.com (images).
import { parseHTML } from "linkedom";
import { statusError, USER_AGENT } from "../ssrf-guard.js";
import type { ImageHit, ImageSearchProvider, ProviderCallContext, WebSearchHit, WebSearchProvider } from "../types.js";
import { WebToolError } from "../web-error.js";

const WEB_BASE = "https://html.duckduckgo.com";
const IMAGES_BASE = "https://duckduckgo.com";
/** DDG's `kp` / `p` values for upstream's `safesearch` (`on`, `moderate`, `off`). */
const SAFESEARCH: Record<string, string> = { on: "1", moderate: "-1", off: "-2" };

function baseUrl(ctx: ProviderCallContext, fallback: string): string {
  const base = typeof ctx.entry.base_url === "string" && ctx.entry.base_url ? ctx.entry.base_url : fallback;
  return base.replace(/\/+$/, "");
}

function setting(ctx: ProviderCallContext, key: string, fallback: string): string {
  const v = ctx.entry[key];
  return typeof v === "string" && v.trim() ? v.trim().toLowerCase() : fallback;
}

/** The target of a DDG result link (`//duckduckgo.com/l/?uddg=<encoded>`), or the link itself. */
function unwrapLink(href: string): string {
  try {
    const u = new URL(href, "https://duckduckgo.com");
    const target = u.searchParams.get("uddg");
    return target ?? u.href;
  } catch {
    return href;
  }
}

async function okText(res: Response, what: string): Promise<string> {
  if (!res.ok) throw statusError(res.status, what);
  return res.text();
}

/** Parses DDG's HTML result page (`.result` blocks, ads skipped). @throws bad_response for a challenge page. */
export function parseDdgResults(html: string, maxResults: number): WebSearchHit[] {
  const { document } = parseHTML(html);
  const hits: WebSearchHit[] = [];
  for (const block of document.querySelectorAll(".result")) {
    if (block.classList.contains("result--ad")) continue;
    const link = block.querySelector("a.result__a");
    const href = link?.getAttribute("href");
    if (!link || !href) continue;
    const snippet = block.querySelector(".result__snippet")?.textContent?.trim() ?? "";
    hits.push({ title: link.textContent?.trim() ?? "", url: unwrapLink(href), snippet });
    if (hits.length >= maxResults) break;
  }
  if (hits.length === 0 && !document.querySelector(".no-results") && !/No\s+results/i.test(document.body?.textContent ?? "")) {
    throw new WebToolError("rate_limited", "DuckDuckGo answered without a result list (rate-limited or a bot challenge); try again later");
  }
  return hits;
}

/** DuckDuckGo web search (upstream `deerflow.community.ddg_search.tools:web_search_tool`); entry keys `region`, `safesearch`. */
export const ddgWebSearch: WebSearchProvider = {
  name: "duckduckgo",
  async search(query, maxResults, ctx) {
    const form = new URLSearchParams({ q: query, kl: setting(ctx, "region", "wt-wt"), kp: SAFESEARCH[setting(ctx, "safesearch", "moderate")] ?? "-1" });
    const res = await ctx.fetch(`${baseUrl(ctx, WEB_BASE)}/html/`, {
      method: "POST",
      body: form.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": USER_AGENT, referer: "https://html.duckduckgo.com/" },
      signal: ctx.signal,
    });
    return parseDdgResults(await okText(res, "DuckDuckGo"), maxResults);
  },
};

interface DdgImage {
  title?: string;
  image?: string;
  thumbnail?: string;
  url?: string;
}

/** DuckDuckGo image search (upstream `deerflow.community.image_search.tools:image_search_tool`). */
export const ddgImageSearch: ImageSearchProvider = {
  name: "duckduckgo",
  async searchImages(query, maxResults, ctx) {
    const base = baseUrl(ctx, IMAGES_BASE);
    const headers = { "user-agent": USER_AGENT, referer: `${IMAGES_BASE}/` };
    const page = await okText(await ctx.fetch(`${base}/?${new URLSearchParams({ q: query, iax: "images", ia: "images" })}`, { headers, signal: ctx.signal }), "DuckDuckGo");
    const vqd = /vqd=["']?([\d-]+)/.exec(page)?.[1];
    if (!vqd) throw new WebToolError("bad_response", "DuckDuckGo returned no search token (vqd); it may be rate-limiting");
    const params = new URLSearchParams({ q: query, o: "json", l: setting(ctx, "region", "wt-wt"), p: SAFESEARCH[setting(ctx, "safesearch", "moderate")] ?? "-1", vqd, f: ",,,,,", s: "0" });
    const res = await ctx.fetch(`${base}/i.js?${params}`, { headers, signal: ctx.signal });
    let data: { results?: DdgImage[] };
    try {
      data = JSON.parse(await okText(res, "DuckDuckGo")) as { results?: DdgImage[] };
    } catch (err) {
      if (err instanceof WebToolError) throw err;
      throw new WebToolError("bad_response", "DuckDuckGo returned a malformed image result (not JSON)");
    }
    if (!Array.isArray(data.results)) throw new WebToolError("bad_response", "DuckDuckGo returned no image results list");
    return data.results.slice(0, maxResults).map(
      (r): ImageHit => ({ title: String(r.title ?? ""), image_url: String(r.image ?? ""), thumbnail_url: String(r.thumbnail ?? ""), source_url: String(r.url ?? "") }),
    );
  },
};
