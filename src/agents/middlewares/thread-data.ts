// Port of DeerFlow agents/middlewares/thread_data_middleware.py (ThreadDataMiddleware).
import { mkdirSync } from "node:fs";
import path from "node:path";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { getRuntimeHome } from "../../config/paths.js";
import type { ThreadData } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Options of {@link ThreadDataMiddleware}. */
export interface ThreadDataOptions {
  /** Root of per-user thread directories; default `DEER_FLOW_HOME`. */
  baseDir?: string;
  /** When true (default) only the paths are computed; when false the directories are created too. */
  lazyInit?: boolean;
}

/**
 * Host directories of one thread: `<base>/users/<user>/threads/<thread>/user-data/{workspace,uploads,outputs}`.
 * @throws Error when an id is not a safe path segment (`^[A-Za-z0-9_-]{1,128}$`).
 */
export function threadDataPaths(baseDir: string, userId: string, threadId: string): ThreadData {
  for (const [label, id] of [["thread id", threadId], ["user id", userId]] as const) {
    if (!SAFE_ID.test(id)) throw new Error(`Invalid ${label} '${id}': must match ^[A-Za-z0-9_-]{1,128}$`);
  }
  const root = path.join(baseDir, "users", userId, "threads", threadId, "user-data");
  return { workspace_path: path.join(root, "workspace"), uploads_path: path.join(root, "uploads"), outputs_path: path.join(root, "outputs") };
}

/**
 * Records the thread's directories in `thread_data` before the agent runs, and stamps the newest human message
 * (same id, same content): `name` "user-input" when unset, `additional_kwargs.run_id` and a UTC ISO `timestamp`.
 * The thread id comes from the runtime context, else `configurable.thread_id`. Hook: beforeAgent.
 * @throws Error "Thread ID is required in runtime context or config.configurable" when neither has one.
 */
export class ThreadDataMiddleware extends DeerflowMiddleware {
  readonly name = "ThreadDataMiddleware";
  /** Context keys this middleware reads (langchain hands before/after hooks only their schema's keys). */
  readonly contextSchema = z.looseObject({ thread_id: z.string().optional(), user_id: z.string().optional(), run_id: z.string().optional() });
  private readonly baseDir?: string;
  private readonly lazyInit: boolean;

  constructor(options: ThreadDataOptions = {}) {
    super();
    this.baseDir = options.baseDir;
    this.lazyInit = options.lazyInit ?? true;
  }

  beforeAgent(state: { messages: BaseMessage[] }, runtime: { context?: Record<string, unknown>; configurable?: Record<string, unknown> }) {
    const ctx = runtime.context ?? {};
    const threadId = (ctx.thread_id ?? runtime.configurable?.thread_id) as string | undefined;
    if (!threadId) throw new Error("Thread ID is required in runtime context or config.configurable");
    const userId = String(ctx.user_id ?? runtime.configurable?.user_id ?? "default");
    const runId = (ctx.run_id ?? runtime.configurable?.run_id) as string | undefined;
    const paths = threadDataPaths(this.baseDir ?? getRuntimeHome(), userId, threadId);
    if (!this.lazyInit) for (const p of Object.values(paths)) mkdirSync(p, { recursive: true });
    const update: Record<string, unknown> = { thread_data: paths };
    const last = state.messages.at(-1);
    if (last && HumanMessage.isInstance(last)) {
      update.messages = [
        new HumanMessage({
          id: last.id,
          content: last.content,
          name: last.name ?? "user-input",
          additional_kwargs: { ...last.additional_kwargs, ...(runId ? { run_id: runId } : {}), timestamp: new Date().toISOString() },
          response_metadata: last.response_metadata,
        }),
      ];
    }
    return update;
  }
}
