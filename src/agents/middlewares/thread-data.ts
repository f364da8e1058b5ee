// Port of DeerFlow agents/middlewares/thread_data_middleware.py (ThreadDataMiddleware).
import { mkdirSync } from "node:fs";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { getRuntimeHome, threadDataPaths } from "../../config/paths.js";
import type { ThreadData } from "../thread-state.js";
import { RunStartMiddleware, type RunStartRuntime, type RunStartUpdate } from "./run-start.js";
import { runContextOf } from "../run-context.js";

/** Options of {@link ThreadDataMiddleware}. */
export interface ThreadDataOptions {
  /** Root of per-user thread directories; default `DEER_FLOW_HOME`. */
  baseDir?: string;
  /** When true (default) only the paths are computed; when false the directories are created too. */
  lazyInit?: boolean;
}

/**
 * What `thread_data` holds in the graph state: the sandbox's virtual directories, never host paths, so no state
 * response or stream frame reveals where the runtime home is. Code that touches files recomputes the host
 * directories from the run's own thread and user ids (`threadDirsOf`, src/sandbox/thread-dirs.ts), never from state a client could write.
 */
export const VIRTUAL_THREAD_DATA: Readonly<ThreadData> = Object.freeze({
  workspace_path: "/mnt/user-data/workspace",
  uploads_path: "/mnt/user-data/uploads",
  outputs_path: "/mnt/user-data/outputs",
});

/**
 * Records the thread's virtual directories ({@link VIRTUAL_THREAD_DATA}) in `thread_data` when a run starts
 * (creating the host directories unless lazy), and stamps the newest human message
 * (same id, same content): `name` "user-input" when unset, `additional_kwargs.run_id` and a UTC ISO `timestamp`.
 * The thread id comes from the runtime context, else `configurable.thread_id`.
 * Hook: DeerFlow's before_agent, made on the run's first model call ({@link RunStartMiddleware}: no graph node).
 * @throws Error "Thread ID is required in runtime context or config.configurable" when neither has one.
 */
export class ThreadDataMiddleware extends RunStartMiddleware {
  readonly name = "ThreadDataMiddleware";
  private readonly baseDir?: string;
  private readonly lazyInit: boolean;

  constructor(options: ThreadDataOptions = {}) {
    super();
    this.baseDir = options.baseDir;
    this.lazyInit = options.lazyInit ?? true;
  }

  /** DeerFlow's before_agent update: `thread_data`, and the stamped newest human message when there is one. */
  runStartUpdate(state: { messages: BaseMessage[] }, runtime: RunStartRuntime): RunStartUpdate {
    const { threadId, userId, runId } = runContextOf(runtime);
    if (!threadId) throw new Error("Thread ID is required in runtime context or config.configurable");
    const paths = threadDataPaths(this.baseDir ?? getRuntimeHome(), userId, threadId);
    if (!this.lazyInit) for (const p of Object.values(paths)) mkdirSync(p, { recursive: true });
    const update: RunStartUpdate = { thread_data: { ...VIRTUAL_THREAD_DATA } };
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
