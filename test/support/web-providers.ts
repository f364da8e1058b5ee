// Calling a research provider the way the tool layer does: through its ProviderBinding from the catalog, with a
// config entry, a signal and a fetch.
import { THIRD_PARTY_PROVIDERS } from "../../src/web/providers/third-party.js";
import type { CapturedImage, FetchedPage, ImageHit, ProviderCallContext, WebSearchHit } from "../../src/web/types.js";

/** The context for one call: `entry` extends `{name, group: "web", use}`; `signal` defaults to a 10 s deadline. */
export function providerCtx(tool: string, use: string, extra: Record<string, unknown>, signal?: AbortSignal): ProviderCallContext {
  return { entry: { name: tool, group: "web", use, ...extra }, signal: signal ?? AbortSignal.timeout(10_000), fetch: globalThis.fetch };
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

/** The message a rejected call gave (fails the test when it resolved). */
export async function failureOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error("expected the provider call to fail");
}
