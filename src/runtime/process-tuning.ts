// What the server process changes in the platform and libraries it runs on, for speed only (results unchanged).
import { installLinearCallbackCopy } from "./callback-copy.js";
import { installRandomPool } from "./random-pool.js";
import { installLeanRunnableScope } from "./runnable-scope.js";

/**
 * Applies the server process's performance patches, each measured in a C=64 profile: buffered
 * `crypto.getRandomValues` for the run ids ({@link installRandomPool}), a linear-time metadata copy in
 * @langchain/core's callback manager ({@link installLinearCallbackCopy}) and, while nothing is traced to LangSmith,
 * runnable scopes without a throwaway RunTree ({@link installLeanRunnableScope}). None changes a result. Called by
 * `src/server.ts` before anything else, and by the test setup so the suite runs what the server runs. Idempotent.
 *
 * @returns Which patches are in place (the @langchain/core patches stay out when the code they replace is not the
 *   1.4.0 code they were written for).
 */
export function tuneServerProcess(): { randomPool: boolean; linearCallbackCopy: boolean; leanRunnableScope: boolean } {
  installRandomPool();
  return {
    randomPool: true,
    linearCallbackCopy: installLinearCallbackCopy(),
    leanRunnableScope: installLeanRunnableScope(),
  };
}
