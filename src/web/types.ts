// The contract between the research tools (web_search, web_fetch, image_search, web_capture) and the providers
// behind them (DuckDuckGo, Jina, Tavily, Exa, ...). Mirrors the split of DeerFlow's community/<provider>/tools.py:
// one tool surface, the provider chosen by the `use:` path of the tool's config.yaml entry.
import type { ToolConfig } from "../config/schema.js";

/** One web search result as the model and the web app see it (`web_search` returns a JSON array of these). */
export interface WebSearchHit {
  title: string;
  url: string;
  /** A short excerpt of the page (upstream's `snippet`; some providers call it `content` or `description`). */
  snippet: string;
  /** Provider extras kept as upstream passes them on (e.g. `published_date`, `score`). */
  [extra: string]: unknown;
}

/** One image search result (`image_search` returns `{results: ImageHit[]}` plus upstream's usage hint). */
export interface ImageHit {
  title: string;
  image_url: string;
  thumbnail_url: string;
  /** The page the image was found on. */
  source_url: string;
}

/** A fetched page before it is shaped for the model: Markdown when the provider returns it, else HTML to extract. */
export interface FetchedPage {
  /** The final URL (after redirects), for the result's header. */
  url: string;
  title?: string;
  /** Markdown (or plain text) ready for the model; wins over `html`. */
  markdown?: string;
  /** Raw HTML, turned into Markdown by the shared extractor (Readability + turndown). */
  html?: string;
}

/** A screenshot taken by a capture provider. */
export interface CapturedImage {
  bytes: Buffer;
  /** `image/png`, `image/jpeg` or `image/webp`. */
  mimeType: string;
}

/**
 * What every provider call receives. `entry` is the tool's config.yaml entry (upstream's per-entry keys such as
 * `api_key`, `base_url`, `max_results`, `timeout`, `region`, `safesearch`, `search_type`, with `$VAR` already
 * substituted). `fetch` is the HTTP client to use: provider API calls to `base_url` go through it unscreened
 * (operator configuration); a URL the model supplied must be checked by the tool before it reaches a provider.
 */
export interface ProviderCallContext {
  entry: ToolConfig & Record<string, unknown>;
  /** Aborts at the tool's timeout or when the run is cancelled. */
  signal: AbortSignal;
  /** `fetch` with the gateway's size cap and timeout applied. */
  fetch: typeof globalThis.fetch;
  /**
   * The provider's key: the entry's `api_key` when set (already `$VAR`-substituted), else the named environment
   * variable (its usual one, e.g. `TAVILY_API_KEY`), else undefined (the provider then throws a `no_key` error).
   */
  apiKey(envVar: string): string | undefined;
}

/** A web search backend (DeerFlow `community/<name>/tools.py:web_search_tool`). */
export interface WebSearchProvider {
  /** Short provider name used in errors, logs and metrics (`ddg`, `tavily`, ...). */
  readonly name: string;
  /** @param maxResults already clamped to the provider's cap. @throws on transport or API errors (the tool reports them). */
  search(query: string, maxResults: number, ctx: ProviderCallContext): Promise<WebSearchHit[]>;
}

/** A web fetch backend (DeerFlow `community/<name>/tools.py:web_fetch_tool`). `url` has passed the SSRF guard. */
export interface WebFetchProvider {
  readonly name: string;
  fetchPage(url: string, ctx: ProviderCallContext): Promise<FetchedPage>;
}

/** An image search backend (DeerFlow `community/<name>/tools.py:image_search_tool`). */
export interface ImageSearchProvider {
  readonly name: string;
  searchImages(query: string, maxResults: number, ctx: ProviderCallContext): Promise<ImageHit[]>;
}

/** A screenshot backend (DeerFlow `community/browserless/tools.py:web_capture_tool`). `url` has passed the SSRF guard. */
export interface CaptureProvider {
  readonly name: string;
  capture(url: string, ctx: ProviderCallContext): Promise<CapturedImage>;
}

/**
 * A provider bound to the tool it serves, as listed in the provider catalog keyed by upstream's `use:` path
 * (e.g. `deerflow.community.tavily.tools:web_search_tool` -> `{tool: "web_search", provider: tavilySearch}`).
 */
export type ProviderBinding =
  | { tool: "web_search"; provider: WebSearchProvider }
  | { tool: "web_fetch"; provider: WebFetchProvider }
  | { tool: "image_search"; provider: ImageSearchProvider }
  | { tool: "web_capture"; provider: CaptureProvider };
