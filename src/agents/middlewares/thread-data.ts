// Port of DeerFlow agents/middlewares/thread_data_middleware.py (ThreadDataMiddleware).
import { mkdirSync } from "node:fs";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { getRuntimeHome, threadDataPaths } from "../../config/paths.js";
import { DeerflowMiddleware } from "./base.js";
import { runContextOf } from "../run-context.js";

/** Options of {@link ThreadDataMiddleware}. */
export interface ThreadDataOptions {
  /** Root of per-user thread directories; default `DEER_FLOW_HOME`. */
  baseDir?: string;
  /** When true (default) only the paths are computed; when false the directories are created too. */
  lazyInit?: boolean;
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
    const { threadId, userId, runId } = runContextOf(runtime);
    if (!threadId) throw new Error("Thread ID is required in runtime context or config.configurable");
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
