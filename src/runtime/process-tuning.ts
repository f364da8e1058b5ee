// What the server process changes in the platform and libraries it runs on, for speed only (results unchanged).
import { installLinearCallbackCopy } from "./callback-copy.js";
import { installRandomPool } from "./random-pool.js";

/**
 * Applies the server process's performance patches, each measured in a C=64 profile: buffered
 * `crypto.getRandomValues` for the run ids ({@link installRandomPool}) and a linear-time metadata copy in
 * @langchain/core's callback manager ({@link installLinearCallbackCopy}). Neither changes a result. Called by
 * `src/server.ts` before anything else, and by the test setup so the suite runs what the server runs. Idempotent.
 *
 * @returns Which patches are in place (the callback copy stays out when @langchain/core's `copy` is not the one it
 *   replaces).
 */
export function tuneServerProcess(): { randomPool: boolean; linearCallbackCopy: boolean } {
  installRandomPool();
  return { randomPool: true, linearCallbackCopy: installLinearCallbackCopy() };
}
