// The research tools module, addressable from config.yaml as `use: deerflow-gateway/web:<export>` and through
// DeerFlow's `deerflow.community.<provider>.tools:<tool>_tool` paths (USE_ALIASES, src/models/resolve-use.ts).
// Each tool export serves every provider: it picks one at call time from its entry's `use:` (src/web/catalog.ts).
import { imageSearchTool, webFetchTool, webSearchTool } from "./web-tools.js";
import { webCaptureTool } from "./web-capture-tool.js";

/** `web_search` (DuckDuckGo by default). */
export const web_search_tool = webSearchTool;
/** `web_fetch` (the gateway's direct fetcher under this path; Jina under DeerFlow's jina_ai path). */
export const web_fetch_tool = webFetchTool;
/** `web_fetch` through the Jina reader (`use: deerflow-gateway/web:jina_fetch_tool`). */
export const jina_fetch_tool = webFetchTool;
/** `image_search` (DuckDuckGo images by default). */
export const image_search_tool = imageSearchTool;
/** `web_capture` (a capture provider from the catalog, e.g. Browserless). */
export const web_capture_tool = webCaptureTool;

export { PROVIDER_CATALOG, CORE_PROVIDERS, unsupportedCommunityTools } from "./catalog.js";
export { guardedFetch, assertPublicUrl, checkUrlSyntax, blockedAddressReason, readCapped } from "./ssrf-guard.js";
export { htmlToMarkdown, formatArticle } from "./extract.js";
export type * from "./types.js";
