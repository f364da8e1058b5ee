// The third-party research providers keyed by DeerFlow's `use:` paths, so an upstream config.yaml entry such as
// `use: deerflow.community.tavily.tools:web_search_tool` binds our implementation unchanged. Spread into the
// tool catalog (src/web/catalog.ts) beside the DuckDuckGo and Jina defaults.
import type { ProviderBinding } from "../types.js";
import { braveImages, braveSearch } from "./third-party/brave.js";
import { browserlessCapture, browserlessFetch } from "./third-party/browserless.js";
import { crawl4aiFetch } from "./third-party/crawl4ai.js";
import { exaFetch, exaSearch } from "./third-party/exa.js";
import { firecrawlFetch, firecrawlSearch } from "./third-party/firecrawl.js";
import { infoquestFetch, infoquestImages, infoquestWebSearch } from "./third-party/infoquest.js";
import { searxngSearch } from "./third-party/searxng.js";
import { serperImages, serperSearch } from "./third-party/serper.js";
import { tavilyFetch, tavilySearch } from "./third-party/tavily.js";

/** Upstream's community packages whose `__init__.py` re-exports the tools, so `deerflow.community.<name>:<tool>` works too. */
const PACKAGE_EXPORTS = new Set(["brave", "serper", "searxng", "crawl4ai", "browserless"]);

/** Each upstream community package and the tools its tools.py defines. */
const BY_PACKAGE: Record<string, ProviderBinding[]> = {
  tavily: [
    { tool: "web_search", provider: tavilySearch },
    { tool: "web_fetch", provider: tavilyFetch },
  ],
  exa: [
    { tool: "web_search", provider: exaSearch },
    { tool: "web_fetch", provider: exaFetch },
  ],
  firecrawl: [
    { tool: "web_search", provider: firecrawlSearch },
    { tool: "web_fetch", provider: firecrawlFetch },
  ],
  brave: [
    { tool: "web_search", provider: braveSearch },
    { tool: "image_search", provider: braveImages },
  ],
  serper: [
    { tool: "web_search", provider: serperSearch },
    { tool: "image_search", provider: serperImages },
  ],
  searxng: [{ tool: "web_search", provider: searxngSearch }],
  infoquest: [
    { tool: "web_search", provider: infoquestWebSearch },
    { tool: "web_fetch", provider: infoquestFetch },
    { tool: "image_search", provider: infoquestImages },
  ],
  crawl4ai: [{ tool: "web_fetch", provider: crawl4aiFetch }],
  browserless: [
    { tool: "web_fetch", provider: browserlessFetch },
    { tool: "web_capture", provider: browserlessCapture },
  ],
};

/**
 * `use:` path -> provider binding for Tavily, Exa, Firecrawl, Brave, Serper, SearXNG, InfoQuest, Crawl4AI and
 * Browserless: `deerflow.community.<name>.tools:<tool>_tool` for every tool upstream's tools.py defines, plus
 * `deerflow.community.<name>:<tool>_tool` where upstream's package re-exports it.
 */
export const THIRD_PARTY_PROVIDERS: Record<string, ProviderBinding> = Object.fromEntries(
  Object.entries(BY_PACKAGE).flatMap(([pkg, bindings]) =>
    bindings.flatMap((b) => {
      const paths = [`deerflow.community.${pkg}.tools:${b.tool}_tool`];
      if (PACKAGE_EXPORTS.has(pkg)) paths.push(`deerflow.community.${pkg}:${b.tool}_tool`);
      return paths.map((p) => [p, b] as const);
    }),
  ),
);
