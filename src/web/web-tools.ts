// The research tools as the model sees them: web_search, web_fetch and image_search, with DeerFlow's names,
// argument names, descriptions and result shapes (community/ddg_search, jina_ai and image_search tools.py; the
// web app's tool-call view, message-group.tsx, renders web_search's JSON array and image_search's `results`).
// Every call goes through runWebCall (config entry, provider, cache, timeout, errors, metrics).
import { tool } from "langchain";
import { z } from "zod";
import { formatArticle, htmlToMarkdown } from "./extract.js";
import { runWebCall } from "./run-web-call.js";
import { assertPublicUrl } from "./ssrf-guard.js";
import type { ImageSearchProvider, WebFetchProvider, WebSearchProvider } from "./types.js";

/** Longest query accepted, in characters (a search engine ignores far less; a 100 KB query is refused). */
export const MAX_QUERY_CHARS = 2000;
/** Longest URL accepted, in characters. */
export const MAX_URL_CHARS = 8192;
/** Most results a search returns, whatever is asked. */
export const MAX_RESULTS_CAP = 20;
const DEFAULT_MAX_RESULTS = 5;

/** Upstream's rule: the entry's `max_results` wins over the call's; clamped to 1..{@link MAX_RESULTS_CAP}. */
function resultCount(entry: Record<string, unknown> | undefined, asked: number | undefined): number {
  const configured = Number(entry?.max_results);
  const n = Number.isFinite(configured) && configured > 0 ? configured : (asked ?? DEFAULT_MAX_RESULTS);
  return Math.min(MAX_RESULTS_CAP, Math.max(1, Math.floor(n)));
}

function checkQuery(query: string): string | null {
  if (!query.trim()) return "the query is empty";
  if (query.length > MAX_QUERY_CHARS) return `the query is too long (${query.length} characters; at most ${MAX_QUERY_CHARS})`;
  return null;
}

const maxResultsArg = (what: string) => z.number().int().optional().describe(`Maximum number of ${what} to return. Default is 5.`);

/**
 * `web_search(query, max_results?)`: a JSON array of `{title, url, snippet, ...}` (the shape the web app renders),
 * or upstream's `{"error": "No results found", "query": ...}` when there are none. DeerFlow `web_search_tool`.
 */
export const webSearchTool = tool(
  async ({ query, max_results }, config) =>
    runWebCall<{ tool: "web_search"; provider: WebSearchProvider }>({
      tool: "web_search",
      config,
      args: { query, max_results },
      validate: () => checkQuery(query),
      execute: async (provider, ctx) => {
        const hits = await provider.search(query.trim(), resultCount(ctx.entry, max_results), ctx);
        if (hits.length === 0) return JSON.stringify({ error: "No results found", query });
        return JSON.stringify(hits, null, 2);
      },
    }),
  {
    name: "web_search",
    description: "Search the web for information. Use this tool to find current information, news, articles, and facts from the internet.",
    schema: z.object({
      query: z.string().describe("Search keywords describing what you want to find. Be specific for better results."),
      max_results: maxResultsArg("results"),
    }),
  },
);

/**
 * `web_fetch(url)`: the page as Markdown (`# <title>` then the article), at most 4,096 characters with a note when
 * cut. The URL passes the SSRF guard first (also before a third-party reader gets it). DeerFlow `web_fetch_tool`.
 */
export const webFetchTool = tool(
  async ({ url }, config) =>
    runWebCall<{ tool: "web_fetch"; provider: WebFetchProvider }>({
      tool: "web_fetch",
      config,
      args: { url },
      validate: () => (url.length > MAX_URL_CHARS ? `the URL is too long (${url.length} characters; at most ${MAX_URL_CHARS})` : null),
      execute: async (provider, ctx) => {
        const checked = await assertPublicUrl(url, { allowPrivateAddresses: ctx.entry.allow_private_addresses === true });
        const page = await provider.fetchPage(checked.href, ctx);
        const article = page.markdown !== undefined ? { title: page.title ?? "", markdown: page.markdown } : htmlToMarkdown(page.html ?? "", page.url);
        return formatArticle(article);
      },
    }),
  {
    name: "web_fetch",
    description: [
      "Fetch the contents of a web page at a given URL.",
      "Only fetch EXACT URLs that have been provided directly by the user or have been returned in results from the web_search and web_fetch tools.",
      "This tool can NOT access content that requires authentication, such as private Google Docs or pages behind login walls.",
      "Do NOT add www. to URLs that do NOT have them.",
      "URLs must include the schema: https://example.com is a valid URL while example.com is an invalid URL.",
    ].join("\n"),
    schema: z.object({ url: z.string().describe("The URL to fetch the contents of.") }),
  },
);

const IMAGE_USAGE_HINT = "Use the 'image_url' values as reference images in image generation. Download them first if needed.";

/**
 * `image_search(query, max_results?)`: `{query, total_results, results: [{title, image_url, thumbnail_url,
 * source_url}], usage_hint}`, or `{"error": "No images found", "query": ...}`. DeerFlow `image_search_tool`.
 */
export const imageSearchTool = tool(
  async ({ query, max_results }, config) =>
    runWebCall<{ tool: "image_search"; provider: ImageSearchProvider }>({
      tool: "image_search",
      config,
      args: { query, max_results },
      validate: () => checkQuery(query),
      execute: async (provider, ctx) => {
        const results = await provider.searchImages(query.trim(), resultCount(ctx.entry, max_results), ctx);
        if (results.length === 0) return JSON.stringify({ error: "No images found", query });
        return JSON.stringify({ query, total_results: results.length, results, usage_hint: IMAGE_USAGE_HINT }, null, 2);
      },
    }),
  {
    name: "image_search",
    description: [
      "Search for images online. Use this tool BEFORE image generation to find reference images for characters, portraits, objects, scenes, or any content requiring visual accuracy.",
      "The returned image URLs can be used as reference images in image generation to significantly improve quality.",
    ].join("\n"),
    schema: z.object({
      query: z.string().describe('Search keywords describing the images you want to find. Be specific for better results (e.g., "Japanese woman street photography 1990s" instead of just "woman").'),
      max_results: maxResultsArg("images"),
    }),
  },
);
