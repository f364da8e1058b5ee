// Per-thread, per-run bookkeeping for middlewares whose instance outlives one run (an SDK agent reused across
// threads and runs). DeerFlow keys the same state by thread id and clears it in before_agent / after_agent;
// here the run is recognised from the runtime, so no extra graph node is needed.
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { runContextOf, type RuntimeLike } from "../run-context.js";

/** Which run a hook call belongs to. */
export interface RunScope {
  /** `context.thread_id`, else `configurable.thread_id`, else `"default"`. */
  threadId: string;
  /** `context.run_id`, else `configurable.run_id`, else `input:<id of the newest human message>`. */
  runId: string;
  /**
   * The run's own context object, when the run id came from it (every gateway run, every `task` subagent): state
   * keyed by it lives exactly as long as the run, so a middleware instance shared by many concurrent runs (one
   * compiled graph serving every run of a build signature) never drops a live run's state to make room.
   */
  owner?: object;
}

export type { RuntimeLike } from "../run-context.js";

/**
 * The run a hook call belongs to. Without a run id (an SDK `invoke` with no context), each new human input
 * starts a run, identified by that message's id: every run appends one, and the message reducer gives it an id.
 */
export function resolveRunScope(runtime: RuntimeLike | undefined, messages: readonly BaseMessage[] = []): RunScope {
  const run = runContextOf(runtime);
  const threadId = run.threadId ?? "default";
  let runId: string | undefined = run.runId;
  if (!runId) {
    let input: BaseMessage | undefined;
    for (let i = messages.length - 1; i >= 0 && !input; i--) if (HumanMessage.isInstance(messages[i])) input = messages[i];
    runId = input?.id ? `input:${input.id}` : "default";
  }
  const ctx = runtime?.context;
  const owner = typeof ctx === "object" && ctx !== null && run.raw.run_id !== undefined && run.raw.run_id !== null ? ctx : undefined;
  return owner ? { threadId, runId: String(runId), owner } : { threadId, runId: String(runId) };
}

/**
 * State kept per run: a run with an owner (its context object, see {@link RunScope.owner}) keeps its state on that
 * object (weakly: it goes with the run, and no number of concurrent runs evicts it); any other run keeps it per
 * thread, for the thread's current run only: asking for a different run on a thread discards the previous run's
 * state, so nothing (queued warnings, counters) leaks between runs. Those threads are kept in LRU order, at most
 * `maxThreads` (DeerFlow `max_tracked_threads`).
 */
export class RunScopedStore<T> {
  private readonly threads = new Map<string, { runId: string; value: T }>();
  private readonly owned = new WeakMap<object, { runId: string; value: T }>();

  /** @param create Makes a run's initial state. @param maxThreads Threads tracked at once (least recently used dropped). */
  constructor(private readonly create: () => T, private readonly maxThreads = 100) {}

  /** The state of `scope`'s run, created (and the thread's previous run dropped) when needed. */
  get(scope: RunScope): T {
    if (scope.owner) {
      let owned = this.owned.get(scope.owner);
      if (!owned || owned.runId !== scope.runId) this.owned.set(scope.owner, (owned = { runId: scope.runId, value: this.create() }));
      return owned.value;
    }
    let entry = this.threads.get(scope.threadId);
    this.threads.delete(scope.threadId);
    if (!entry || entry.runId !== scope.runId) entry = { runId: scope.runId, value: this.create() };
    this.threads.set(scope.threadId, entry);
    while (this.threads.size > this.maxThreads) this.threads.delete(this.threads.keys().next().value as string);
    return entry.value;
  }

  /** The state of `scope`'s run if it exists, without creating or reordering anything. */
  peek(scope: RunScope): T | undefined {
    if (scope.owner) {
      const owned = this.owned.get(scope.owner);
      return owned && owned.runId === scope.runId ? owned.value : undefined;
    }
    const entry = this.threads.get(scope.threadId);
    return entry && entry.runId === scope.runId ? entry.value : undefined;
  }

  /** Number of threads tracked in the per-thread LRU (runs with an owner are not counted). */
  get size(): number {
    return this.threads.size;
  }
}
