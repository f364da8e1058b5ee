// Jina reader web fetch (DeerFlow community/jina_ai): the page is fetched by Jina's reader service and returned as
// HTML, which the shared extractor turns into Markdown. Speaks the documented reader API as upstream's client does:
// POST {base_url}/ with JSON `{url}` and `X-Return-Format: html`, `X-Timeout: <seconds>`, and
// `Authorization: Bearer <key>` when a key is configured (entry `api_key`, else JINA_API_KEY; without one Jina
// serves a lower rate limit). `base_url` defaults to https://r.jina.ai.
import { statusError } from "../ssrf-guard.js";
import type { WebFetchProvider } from "../types.js";
import { WebToolError } from "../web-error.js";

const JINA_BASE = "https://r.jina.ai";

/** Jina reader (upstream `deerflow.community.jina_ai.tools:web_fetch_tool`). The URL has passed the SSRF guard. */
export const jinaFetch: WebFetchProvider = {
  name: "jina",
  async fetchPage(url, ctx) {
    const base = typeof ctx.entry.base_url === "string" && ctx.entry.base_url ? ctx.entry.base_url.replace(/\/+$/, "") : JINA_BASE;
    const timeout = Number(ctx.entry.timeout);
    const headers: Record<string, string> = { "content-type": "application/json", "x-return-format": "html", "x-timeout": String(Number.isFinite(timeout) && timeout > 0 ? timeout : 10) };
    const key = ctx.apiKey("JINA_API_KEY");
    if (key) headers.authorization = `Bearer ${key}`;
    const res = await ctx.fetch(`${base}/`, { method: "POST", headers, body: JSON.stringify({ url }), signal: ctx.signal });
    if (!res.ok) throw statusError(res.status, "Jina");
    const html = await res.text();
    if (!html.trim()) throw new WebToolError("bad_response", "Jina returned an empty response");
    return { url, html };
  },
};
