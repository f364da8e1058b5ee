// Where a run's thread files live on the host, recomputed from the run context. Shared by the thread-data, uploads
// and view-image middlewares and by the tools, so tools never import a middleware for it.
import { getRuntimeHome, threadDataPaths } from "../config/paths.js";
import type { ThreadData } from "../agents/thread-state.js";
import { runContextOf } from "../agents/run-context.js";

/**
 * The host directories of the run's thread, recomputed from the run context ({@link runContextOf}: `thread_id`,
 * `user_id`), or null without a usable thread id. Never taken from graph state, which a client could write.
 * @param baseDir Root of thread directories; default `DEER_FLOW_HOME`.
 */
export function threadDirsOf(runtime: { context?: unknown; configurable?: Record<string, unknown> } | undefined, baseDir?: string): ThreadData | null {
  const { threadId, userId } = runContextOf(runtime as never);
  if (!threadId) return null;
  try {
    return threadDataPaths(baseDir ?? getRuntimeHome(), userId, threadId);
  } catch {
    return null;
  }
}
