// The compiled lead-agent graphs of recent builds, shared by every run whose build resolves to the same inputs.
// DeerFlow builds the agent on every request; so does `_makeLeadAgent` (the three configuration levels, the agent's
// files, the skills and extensions are read per request), but compiling a graph from identical inputs gives an
// identical graph, so the compile is done once per distinct build and each run gets its own cheap copy of it.
import { LRUCache } from "lru-cache";
import type { DeerflowAgent } from "../factory.js";

/** Builds kept (least recently used dropped). A build is one (config version, user, agent, options) combination. */
export const BUILD_CACHE_MAX = 32;

/**
 * Longest signature (characters) whose build is shared. A signature carries request options as given (e.g. a
 * free-form `reasoning_effort`), so a caller could otherwise make the cache hold 32 keys of megabytes each; a build
 * with a larger signature is compiled for its run alone, as before sharing existed.
 */
export const MAX_SHARED_SIGNATURE_CHARS = 256 * 1024;

const builds = new LRUCache<string, Promise<DeerflowAgent>>({ max: BUILD_CACHE_MAX });
const objectIds = new WeakMap<object, number>();
let nextObjectId = 1;

/**
 * A number naming `value` for as long as it lives: the part of a build signature for inputs compared by identity
 * (the `AppConfig` version, which is a new object whenever config.yaml's content changes, and the memory manager).
 */
export function identityOf(value: object | null | undefined): number {
  if (!value) return 0;
  let id = objectIds.get(value);
  if (id === undefined) objectIds.set(value, (id = nextObjectId++));
  return id;
}

/**
 * The agent compiled for `signature`, compiling it with `build` on first use. Concurrent calls with one signature
 * share one build; a build that fails is forgotten (the next call tries again, and every caller sees the error). A
 * signature over {@link MAX_SHARED_SIGNATURE_CHARS} is built and not kept.
 * @param signature Every input the compiled graph depends on, serialised (see `_makeLeadAgent`).
 * @returns `{agent, cached}`: `cached` is false for the call that started the build.
 * @throws whatever `build` throws.
 */
export async function sharedBuild(signature: string, build: () => Promise<DeerflowAgent>): Promise<{ agent: DeerflowAgent; cached: boolean }> {
  if (signature.length > MAX_SHARED_SIGNATURE_CHARS) return { agent: await build(), cached: false };
  const hit = builds.get(signature);
  if (hit) return { agent: await hit, cached: true };
  const pending = build();
  builds.set(signature, pending);
  try {
    return { agent: await pending, cached: false };
  } catch (err) {
    if (builds.get(signature) === pending) builds.delete(signature);
    throw err;
  }
}

/** Forgets every shared build (tests; an embedder that changed something a signature cannot see). */
export function clearBuildCache(): void {
  builds.clear();
}

/** Number of builds held. */
export function buildCacheSize(): number {
  return builds.size;
}
