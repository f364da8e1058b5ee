// The research tools' result cache: identical searches and fetches within a run, and across one user's runs for a
// few minutes, are answered from memory (a model often repeats a query; a fetch costs seconds). Bounded by entry
// count and total characters; keyed by user, tool, provider entry and arguments, so users never share results.
// Only successful results are kept. In-process: with several gateway processes each has its own.
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";

/** How long a result is reused, in ms (5 minutes). */
export const WEB_CACHE_TTL_MS = 5 * 60_000;
/** Most results kept. */
export const WEB_CACHE_MAX_ENTRIES = 2000;
/** Most characters kept in all (about 64 MB of UTF-16). */
export const WEB_CACHE_MAX_CHARS = 32 * 1024 * 1024;

const cache = new LRUCache<string, string>({ max: WEB_CACHE_MAX_ENTRIES, maxSize: WEB_CACHE_MAX_CHARS, sizeCalculation: (v) => Math.max(1, v.length), ttl: WEB_CACHE_TTL_MS });

/** The cache key of one call: a digest of the user, tool, whole config entry (provider and its settings) and arguments. */
export function webCacheKey(userId: string, tool: string, entry: unknown, args: unknown): string {
  return createHash("sha256").update(JSON.stringify([userId, tool, entry, args])).digest("base64url");
}

/** A cached result, or undefined. */
export function getCachedResult(key: string): string | undefined {
  return cache.get(key);
}

/** Keeps a successful result for {@link WEB_CACHE_TTL_MS}. */
export function cacheResult(key: string, result: string): void {
  cache.set(key, result);
}
