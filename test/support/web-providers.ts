// Calling a research provider the way the tool layer does: through its ProviderBinding from the catalog, with a
// config entry, a signal, a fetch and the key reader.
import { readProviderEnv } from "../../src/config/web-env.js";
import { THIRD_PARTY_PROVIDERS } from "../../src/web/providers/third-party.js";
import { WebProviderError } from "../../src/web/provider-http.js";
import type { CapturedImage, FetchedPage, ImageHit, ProviderCallContext, WebSearchHit } from "../../src/web/types.js";

/** The context for one call: `entry` extends `{name, group: "web", use}`; `signal` defaults to a 10 s deadline. */
export function providerCtx(tool: string, use: string, extra: Record<string, unknown>, signal?: AbortSignal): ProviderCallContext {
  const entry: Record<string, unknown> & { name: string; group: string; use: string } = { name: tool, group: "web", use, ...extra };
  // as run-web-call.ts: the entry's api_key, else the provider's variable
  const apiKey = (envVar: string) => (typeof entry.api_key === "string" && entry.api_key.trim() ? entry.api_key : readProviderEnv(envVar));
  return { entry, signal: signal ?? AbortSignal.timeout(10_000), fetch: globalThis.fetch, apiKey };
}

/** Runs the binding registered for `use` (which must serve `web_search`). */
export function searchVia(use: string, query: string, max: number, ctx: ProviderCallContext): Promise<WebSearchHit[]> {
  const b = THIRD_PARTY_PROVIDERS[use];
  if (b?.tool !== "web_search") throw new Error(`${use} is not a web_search binding`);
  return b.provider.search(query, max, ctx);
}

/** Runs the binding registered for `use` (which must serve `web_fetch`). */
export function fetchVia(use: string, url: string, ctx: ProviderCallContext): Promise<FetchedPage> {
  const b = THIRD_PARTY_PROVIDERS[use];
  if (b?.tool !== "web_fetch") throw new Error(`${use} is not a web_fetch binding`);
  return b.provider.fetchPage(url, ctx);
}

/** Runs the binding registered for `use` (which must serve `image_search`). */
export function imagesVia(use: string, query: string, max: number, ctx: ProviderCallContext): Promise<ImageHit[]> {
  const b = THIRD_PARTY_PROVIDERS[use];
  if (b?.tool !== "image_search") throw new Error(`${use} is not an image_search binding`);
  return b.provider.searchImages(query, max, ctx);
}

/** Runs the binding registered for `use` (which must serve `web_capture`). */
export function captureVia(use: string, url: string, ctx: ProviderCallContext): Promise<CapturedImage> {
  const b = THIRD_PARTY_PROVIDERS[use];
  if (b?.tool !== "web_capture") throw new Error(`${use} is not a web_capture binding`);
  return b.provider.capture(url, ctx);
}

/** `<provider display name>: <message>` of a rejected call (fails the test when it resolved, or threw no WebProviderError). */
export async function failureOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof WebProviderError)) throw err;
    return `${err.provider}: ${err.message}`;
  }
  throw new Error("expected the provider call to fail");
}
