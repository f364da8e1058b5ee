// The provider catalog: which provider serves a research tool, keyed by the `use:` path of the tool's config
// entry. DeerFlow's Python paths (`deerflow.community.<provider>.tools:<tool>_tool`) are keys as written, so
// DeerFlow's config.yaml works unchanged; our own paths (`deerflow-gateway/web:<tool>_tool`) are keys too. Every
// key resolves (USE_ALIASES in src/models/resolve-use.ts) to the one tool export of src/web/index.ts, which looks
// the entry's `use:` up here at call time: adding a provider is adding an entry.
import { ddgImageSearch, ddgWebSearch } from "./providers/ddg.js";
import { directFetch } from "./providers/direct.js";
import { jinaFetch } from "./providers/jina.js";
import { THIRD_PARTY_PROVIDERS } from "./providers/third-party.js";
import type { ProviderBinding } from "./types.js";

/** The research tools, by the name the model calls them. */
export type WebToolName = ProviderBinding["tool"];

/** DeerFlow's module prefix of community tools; a path under it that is not in the catalog stops the start. */
export const COMMUNITY_PREFIX = "deerflow.community.";

/** The providers of this part: DuckDuckGo (web and images), Jina reader, and the gateway's own direct fetcher. */
export const CORE_PROVIDERS: Readonly<Record<string, ProviderBinding>> = {
  "deerflow.community.ddg_search.tools:web_search_tool": { tool: "web_search", provider: ddgWebSearch },
  "deerflow.community.image_search.tools:image_search_tool": { tool: "image_search", provider: ddgImageSearch },
  "deerflow.community.jina_ai.tools:web_fetch_tool": { tool: "web_fetch", provider: jinaFetch },
  "deerflow-gateway/web:web_search_tool": { tool: "web_search", provider: ddgWebSearch },
  "deerflow-gateway/web:image_search_tool": { tool: "image_search", provider: ddgImageSearch },
  "deerflow-gateway/web:web_fetch_tool": { tool: "web_fetch", provider: directFetch },
  "deerflow-gateway/web:jina_fetch_tool": { tool: "web_fetch", provider: jinaFetch },
};

/** Every `use:` path a research tool entry may name, and the provider it selects. */
export const PROVIDER_CATALOG: Readonly<Record<string, ProviderBinding>> = {
  ...CORE_PROVIDERS,
  ...THIRD_PARTY_PROVIDERS,
};

/** The provider a tool uses when the run has no config entry for it (an SDK embed without `tools:`). */
export const DEFAULT_BINDINGS: Readonly<Record<WebToolName, ProviderBinding | undefined>> = {
  web_search: CORE_PROVIDERS["deerflow-gateway/web:web_search_tool"],
  image_search: CORE_PROVIDERS["deerflow-gateway/web:image_search_tool"],
  web_fetch: CORE_PROVIDERS["deerflow-gateway/web:web_fetch_tool"],
  web_capture: undefined,
};

/**
 * The `use:` paths of `tools` that name a DeerFlow community tool the gateway does not offer (groundroute,
 * fastcrw, browser_automation, ...): the config loader refuses to start with them rather than drop them silently.
 */
export function unsupportedCommunityTools(tools: readonly { name: string; use: string }[]): string[] {
  return tools.filter((t) => t.use.startsWith(COMMUNITY_PREFIX) && !Object.hasOwn(PROVIDER_CATALOG, t.use)).map((t) => t.use);
}
