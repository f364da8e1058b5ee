// The run worker (DeerFlow runtime/runs/worker.py run_agent): waits for the run's predecessors, builds the run
// context and the agent, streams the graph into the stream bridge as wire events, rolls back on request and
// records the final run and thread status. Runs in the background; never throws.
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Callbacks } from "@langchain/core/callbacks/manager";
import type { Checkpoint, CheckpointTuple } from "@langchain/langgraph";
import { MiddlewareError } from "langchain";
import type { Logger } from "pino";
import type { MemoryManager } from "../../agents/memory/manager.js";
import { buildRunContext, runContextOf, type RunSandboxProvider } from "../../agents/run-context.js";
import { streamAgent } from "../../agents/stream-agent.js";
import type { RunObservation, RunObserver, RunUsage } from "../../observability/run-observer.js";
import type { AppConfig } from "../../config/schema.js";
import type { AgentFactory } from "./agent-factory.js";
import type { Persistence } from "../persistence/persistence.js";
import { ensureInterruptedTitle, keepPartialAnswer, PartialAnswer } from "./interrupted-title.js";
import { latestCheckpoint, rollbackThread } from "../threads/rollback.js";
import { takeUnsavedRunStartWrites } from "../../agents/middlewares/run-start.js";
import type { RunConfig } from "./run-config.js";
import { emptyRunCounters, RUN_COUNTER_KEYS, type RunCounters } from "./run-counters.js";
import { RunJournal } from "../stream/run-journal.js";
import { RUN_JOURNAL_KEY } from "../../agents/run-journal-sink.js";
import { FINISHED_RUN_RETENTION_MS, type ActiveRun, type RunManager, type RunStatus } from "./run-manager.js";
import type { RunRequest } from "./run-request.js";
import type { StreamBridge } from "../stream/stream-bridge.js";
import { pendingNodes, readThreadState } from "../threads/thread-state-reader.js";
import type { ThreadStatus } from "../persistence/sqlite/thread-store.js";
import { runTurns } from "./run-scheduler.js";
import { SettlingCheckpointer } from "../persistence/settling-checkpointer.js";
import { graphStreamModes, toWireEvents } from "../wire/wire-events.js";
import { nextGoalTurn, type GoalTurnDeps } from "../goals/goal-loop.js";
import { trackRunWorkspace, type RunWorkspaceTracker, type WorkspaceEventSink } from "../workspace/run-workspace.js";

/** The one graph method the worker uses after a failed run. */
type StateUpdatable = { updateState(config: Record<string, unknown>, values: Record<string, unknown>, asNode?: string): Promise<unknown> };

/** Longest stretch, in ms, a run streaming without I/O holds the event loop between yields. */
const YIELD_EVERY_MS = 2;

/** The process-wide services a worker uses. */
export interface WorkerDeps {
  bridge: StreamBridge;
  runs: RunManager;
  persistence: Persistence;
  agentFactory: AgentFactory;
  getAppConfig: () => AppConfig;
  logger: Logger;
  /** How long a finished run's events stay replayable, in ms (default {@link FINISHED_RUN_RETENTION_MS}, 60000). */
  cleanupDelayMs?: number;
  /** The process's memory backend, handed to every run through its context. */
  memoryManager?: MemoryManager;
  /** The process's sandbox provider, handed to every run through its context. */
  sandboxProvider?: RunSandboxProvider;
  /** Metrics and model-call observation of each run (src/observability); none in bare embeds. */
  observer?: RunObserver;
  /** With `home` (the runtime home holding thread files): each run's workspace changes are recorded here. */
  runEvents?: WorkspaceEventSink;
  home?: string;
}

/** What one admitted run executes: its graph input, its assembled config and the request it came from. */
export interface RunJob {
  input: unknown;
  runConfig: RunConfig;
  request: RunRequest;
  /** The HTTP request that created the run (its `x-request-id`), for the run's metadata. */
  requestId?: string;
  /** The run's logger (run, thread and request ids bound); default a child of `deps.logger`. */
  log?: Logger;
  /** The run's observation (metrics, callbacks), when the service has an observer. */
  observation?: RunObservation;
  /**
   * Whether the run's thread was created for it, `busy` (`ThreadRepository.createForRun`), under an id the request
   * generated, so no other run can have used it: the worker then neither marks it busy again nor reads its (absent)
   * checkpoint before the run, and releases it however the run ends, started or not.
   */
  freshThread?: boolean;
  /**
   * Set when the run is resumed after its process died or handed it over (docs/durable-runs.md): the attempt number
   * (2 for the first resume), published in the `metadata` frame so a client can drop the partial message of the
   * step that is re-run.
   */
  attempt?: number;
}

/** The factory's callbacks (a handler list, or a manager) plus the observer's handlers. */
function withHandlers(callbacks: unknown, handlers: BaseCallbackHandler[] | undefined): Callbacks | undefined {
  if (!handlers?.length) return callbacks as Callbacks | undefined;
  if (callbacks === undefined || callbacks === null) return handlers;
  if (Array.isArray(callbacks)) return [...callbacks, ...handlers];
  const manager = callbacks as { copy(): { addHandler(h: BaseCallbackHandler, inherit?: boolean): void } };
  const copy = manager.copy();
  for (const h of handlers) copy.addHandler(h, true);
  return copy as unknown as Callbacks;
}

/** What a factory may report about the agent it built (`_makeLeadAgent` sets it; other graphs need not). */
interface ResolvedBuild {
  resolved?: { metadata?: Record<string, unknown>; callbacks?: unknown };
}

/**
 * The error to report for a failed run: langchain wraps errors raised under a middleware in `MiddlewareError`
 * (same message, original as `cause`); the client should see the original class name.
 */
export function rootError(err: unknown): Error {
  let e = err instanceof Error ? err : new Error(String(err));
  while (MiddlewareError.isInstance(e) && e.cause instanceof Error) e = e.cause;
  return e;
}

/** Messages in a checkpoint's `messages` channel. */
/** A checkpoint's tool messages' ids (a tool message without an id counts as new). */
const toolMessageIds = (checkpoint: Checkpoint | undefined): Set<unknown> => {
  const messages = (checkpoint?.channel_values as { messages?: unknown } | undefined)?.messages;
  const ids = new Set<unknown>();
  if (Array.isArray(messages)) for (const m of messages) if (((m as { getType?: () => string }).getType?.() ?? (m as { type?: unknown }).type) === "tool") ids.add((m as { id?: unknown }).id ?? Symbol("no id"));
  return ids;
};

/**
 * Whether the run may have changed the thread's files: only tools write them, so a run that ended normally with no
 * new tool message in its thread did not (a failed or stopped run may have stopped inside a tool: assume it did).
 */
function mayHaveChangedFiles(progress: RunProgress): boolean {
  if (progress.status !== "success") return true;
  const before = toolMessageIds(progress.before?.checkpoint);
  for (const id of toolMessageIds(progress.checkpointer?.latestRoot)) if (!before.has(id)) return true;
  return false;
}

const messageCount = (checkpoint: Checkpoint | undefined): number => {
  const messages = checkpoint?.channel_values?.messages;
  return Array.isArray(messages) ? messages.length : 0;
};

/**
 * The Run JSON counters of a finished run (DeerFlow RunJournal): its model usage by caller, the messages it added
 * (newest checkpoint of the run against the one it started from) and the stop reason a guard middleware wrote
 * into the run context.
 */
function runCounters(usage: RunUsage | undefined, before: CheckpointTuple | undefined, latest: Checkpoint | undefined, context: Record<string, unknown> | undefined): RunCounters {
  const counters = emptyRunCounters();
  if (usage) {
    Object.assign(counters, {
      total_input_tokens: usage.inputTokens,
      total_output_tokens: usage.outputTokens,
      total_tokens: usage.inputTokens + usage.outputTokens,
      llm_call_count: usage.calls,
      lead_agent_tokens: usage.leadAgentTokens,
      subagent_tokens: usage.subagentTokens,
      middleware_tokens: usage.middlewareTokens,
    });
  }
  if (latest) counters.message_count = Math.max(0, messageCount(latest) - messageCount(before?.checkpoint));
  counters.stop_reason = typeof context?.stop_reason === "string" ? context.stop_reason : null;
  return counters;
}

/** An agent as the factory returns it, with what the build may report. */
type BuiltAgent = Awaited<ReturnType<AgentFactory>> & ResolvedBuild;

/**
 * How far one run got, filled in step by step so that {@link recordOutcome} knows what to undo and record however
 * the run ended (one object per run; the steps write it in the order the run reaches them).
 */
interface RunProgress {
  status: RunStatus;
  /** The message recorded with an `error` status. */
  error: string | undefined;
  /** Past its turn: the run owns its thread from here (marked busy, `metadata` published). */
  started: boolean;
  /** The checkpoint the run started from (none for a thread created for it): what a rollback restores. */
  before: CheckpointTuple | undefined;
  /** The run's context (run id, user, memory, sandbox, the guard middlewares' stop reason). */
  context: Record<string, unknown> | undefined;
  /** The graph the factory built, once it did. */
  agent: BuiltAgent | undefined;
  /** The run's own view of the checkpointer (set with `agent`). */
  checkpointer: SettlingCheckpointer | undefined;
  /** The run metadata the graph streams with: the request's, the run's ids and what the build resolved. */
  metadata: Record<string, unknown> | undefined;
  /** The `running` save, in flight while the graph starts (see {@link buildAgent}). */
  savingRunning: Promise<unknown> | undefined;
  /** The run's workspace tracker (workspace changes), once the run took its turn. */
  workspace?: RunWorkspaceTracker;
  /** The run's journal (DeerFlow's `run.*`, `llm.*`, `middleware:*` events), once the run took its turn. */
  journal?: RunJournal;
  /** The AI message being streamed: kept in the thread when the run ends early. */
  partial: PartialAnswer;
}

/**
 * Executes a run the thread admitted to completion. Cancelled while pending: no agent is built (DeerFlow
 * `test_pending_cancel_stops_waiting_for_prior_finalization`). A failure publishes an `error` event; a cancel with
 * `action=rollback` restores the checkpoint the run started from. Always publishes `end`, records the final
 * status and releases the thread. Never throws.
 */
export async function runAgent(run: ActiveRun, job: RunJob, deps: WorkerDeps): Promise<void> {
  const signal = run.controller.signal;
  const log = job.log ?? deps.logger.child({ run_id: run.record.run_id, thread_id: run.record.thread_id });
  const progress: RunProgress = { status: "success", error: undefined, started: false, before: undefined, context: undefined, agent: undefined, checkpointer: undefined, metadata: undefined, savingRunning: undefined, partial: new PartialAnswer() };
  try {
    if (!(await waitForTurn(run.predecessors, signal))) {
      progress.status = "interrupted";
      return;
    }
    progress.started = true;
    job.observation?.started();
    if (deps.runEvents) (progress.journal = new RunJournal(deps.runEvents, { runId: run.record.run_id, threadId: run.record.thread_id, assistantId: run.record.assistant_id, attempt: job.attempt ?? 1 })).start();
    if (deps.runEvents && deps.home) await (progress.workspace = trackRunWorkspace(deps.home, String(job.runConfig.context.user_id), run.record.thread_id, run.record.run_id, deps.runEvents, { fresh: job.freshThread })).ready;
    const agent = await buildAgent(run, job, deps, progress, log);
    if (signal.aborted) throw signal.reason;
    await streamAndPublish(agent, run, job, deps.bridge, progress);
    // An active thread goal continues the run with hidden turns while the evaluator says it may (goal-loop.ts).
    for (let input; !signal.aborted && (input = await nextGoalTurn(goalDeps(run, job, deps, progress, log))); ) await streamAndPublish(agent, run, continuationJob(job, input), deps.bridge, progress);
    if (signal.aborted) progress.status = "interrupted";
  } catch (err) {
    reportFailure(err, run, deps.bridge, progress, log);
  } finally {
    // The run no longer holds the thread's sandbox (DeerFlow SandboxMiddleware.after_agent's release).
    if (progress.context) deps.sandboxProvider?.releaseThread?.(String(progress.context.thread_id), String(progress.context.user_id));
    if (run.handedOver) await handOverRun(run, job, deps, progress, log);
    else await recordOutcome(run, job, deps, progress, log);
    log.info({ status: run.handedOver ? "handed over" : progress.status }, "run finished");
  }
}

/**
 * Stops a run handed over to another process: no outcome, no end of stream (the process that resumes it records
 * and ends both); only the checkpoint writes it started are settled, so the resume starts from its last step.
 */
async function handOverRun(run: ActiveRun, job: RunJob, deps: WorkerDeps, progress: RunProgress, log: Logger): Promise<void> {
  try {
    await progress.savingRunning;
    await progress.checkpointer?.settle();
  } catch (err) {
    log.error({ err: (err as Error).message }, "settling a handed-over run failed");
  } finally {
    deps.runs.finish(run.record.run_id);
    job.observation?.finished("interrupted");
  }
}

/**
 * The job of a goal continuation turn: its hidden input, from the thread's newest checkpoint. A `checkpoint_id` the
 * request named (the web app sends the head it last saw) chose where the first turn started; kept, every turn
 * would restart from there and never see the one before.
 */
function continuationJob(job: RunJob, input: unknown): RunJob {
  const { checkpoint_id: _first, ...configurable } = job.runConfig.configurable;
  return { ...job, input, runConfig: { ...job.runConfig, configurable } } as RunJob;
}

/** What the goal loop needs from this run (built by then: the agent and its settling checkpointer). */
function goalDeps(run: ActiveRun, job: RunJob, deps: WorkerDeps, progress: RunProgress, log: Logger): GoalTurnDeps {
  const model = job.runConfig.context.model_name ?? job.runConfig.configurable.model_name;
  return {
    threadId: run.record.thread_id, runId: run.record.run_id, checkpointer: progress.checkpointer!, graph: ((progress.agent as { graph?: StateUpdatable }).graph ?? progress.agent) as StateUpdatable,
    appConfig: deps.getAppConfig(), modelName: typeof model === "string" ? model : null, signal: run.controller.signal, log,
    publishValues: (values) => deps.bridge.publish(run.record.run_id, "values", values),
  };
}

/**
 * Waits until every run admitted before this one on its thread has finished, then for a turn of the run
 * scheduler. Resolves false as soon as the run is cancelled (no agent is then built), else true.
 */
async function waitForTurn(predecessors: Promise<void>, signal: AbortSignal): Promise<boolean> {
  await Promise.race([predecessors, new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))]);
  if (signal.aborted) return false;
  // The build and the graph's first steps run without I/O: wait for a turn, so runs started together take turns
  // with each other and with the sockets instead of holding the event loop back to back.
  await runTurns.turn();
  return !signal.aborted;
}

/**
 * Takes the thread (busy, unless it was created busy for the run), publishes `metadata`, reads the checkpoint the
 * run starts from, builds the run context and asks the factory for the graph; starts the `running` save without
 * awaiting it. Records each result in `progress` as soon as it has it. @throws whatever the store or the factory
 * throws.
 */
async function buildAgent(run: ActiveRun, job: RunJob, deps: WorkerDeps, progress: RunProgress, log: Logger): Promise<BuiltAgent> {
  const { persistence, runs } = deps;
  const { run_id: runId, thread_id: threadId } = run.record;
  const { runConfig } = job;
  if (!job.freshThread) await persistence.threads.setStatus(threadId, "busy");
  deps.bridge.publish(runId, "metadata", { run_id: runId, thread_id: threadId, attempt: job.attempt ?? 1 });
  // A thread created for this run has no checkpoint yet: nothing to read (or to roll back to).
  if (!job.freshThread) progress.before = await latestCheckpoint(persistence.checkpointer, threadId);
  const context = (progress.context = buildRunContext({
    threadId,
    runId,
    userId: String(runConfig.context.user_id),
    userRole: typeof runConfig.context.user_role === "string" ? runConfig.context.user_role : undefined,
    options: runConfig.context,
    appConfig: deps.getAppConfig(),
    memoryManager: deps.memoryManager,
    sandboxProvider: deps.sandboxProvider,
  }));
  // Middlewares report their decisions to the journal through the context, under upstream's key.
  if (progress.journal) context[RUN_JOURNAL_KEY] = progress.journal;
  const baseMetadata = { ...runConfig.metadata, ...(job.requestId ? { request_id: job.requestId } : {}), run_id: runId, thread_id: threadId, assistant_id: run.record.assistant_id };
  const agent = (await deps.agentFactory({
    configurable: runConfig.configurable,
    context,
    metadata: baseMetadata,
    recursionLimit: runConfig.recursion_limit,
    tags: runConfig.tags,
    runName: runConfig.run_name,
  })) as BuiltAgent;
  // The run's own view of the checkpointer: a rollback first waits for the writes this run's graph started.
  agent.checkpointer = progress.checkpointer = new SettlingCheckpointer(persistence.checkpointer, { fresh: job.freshThread, runId });
  progress.agent = agent;
  const metadata = (progress.metadata = { ...baseMetadata, ...(agent.resolved?.metadata ?? {}) });
  run.record.metadata = { ...run.record.metadata, ...metadata };
  // One store write for both: the run is `running` from here, with what the build resolved in its metadata. Not
  // awaited here: the write joins the group commit of the run's first checkpoints instead of holding the first
  // token back by a commit (store reads commit the queue first, so every reader already sees `running`). The
  // outcome is recorded only after it settled.
  progress.savingRunning = runs.setStatus(runId, "running").catch((err: Error) => log.error({ err: err.message }, "saving the run as running failed"));
  return agent;
}

/**
 * Streams the graph and publishes each chunk on the bridge as a wire event, until the graph ends or the run is
 * cancelled. @throws whatever the graph throws.
 */
async function streamAndPublish(agent: BuiltAgent, run: ActiveRun, job: RunJob, bridge: StreamBridge, progress: RunProgress): Promise<void> {
  const { runConfig, request } = job;
  const runId = run.record.run_id;
  const signal = run.controller.signal;
  const subgraphs = Boolean(request.stream_subgraphs);
  const chunks = await streamAgent(agent, job.input, {
    // Both set by buildAgent before it returned the agent.
    context: progress.context!,
    configurable: runConfig.configurable,
    metadata: progress.metadata,
    callbacks: withHandlers(agent.resolved?.callbacks, [...(job.observation?.callbacks ?? []), ...(progress.journal ? [progress.journal] : [])]) as never,
    recursionLimit: runConfig.recursion_limit,
    tags: runConfig.tags,
    runName: runConfig.run_name,
    streamMode: graphStreamModes(request.streamModes),
    subgraphs,
    signal,
    interruptBefore: request.interrupt_before ?? undefined,
    interruptAfter: request.interrupt_after ?? undefined,
  });
  // A run whose model answers without I/O (cached, local, scripted) advances in one unbroken microtask chain,
  // and socket writes wait for it: yield to the event loop after the first token (so it leaves at once) and
  // then at most every YIELD_EVERY_MS. Yielding after every chunk cost a writev and a setImmediate per frame.
  let lastYield = performance.now();
  let firstTokenOut = false;
  for await (const { event, data, json } of toWireEvents(chunks, { subgraphs })) {
    if (signal.aborted) break;
    bridge.publish(runId, event, data, json);
    if (event === "messages") progress.partial.add(data);
    const firstToken: boolean = !firstTokenOut && event.startsWith("messages");
    if (firstToken || performance.now() - lastYield >= YIELD_EVERY_MS) {
      firstTokenOut ||= firstToken;
      await runTurns.turn();
      lastYield = performance.now();
    }
  }
}

/**
 * Records why a run stopped early: `interrupted` when it was cancelled, else `error` with the original error's
 * class name and message, published as an `error` event.
 */
function reportFailure(err: unknown, run: ActiveRun, bridge: StreamBridge, progress: RunProgress, log: Logger): void {
  if (run.controller.signal.aborted) {
    progress.status = "interrupted";
    return;
  }
  progress.status = "error";
  const e = rootError(err);
  const name = e.constructor?.name && e.constructor.name !== "Error" ? e.constructor.name : e.name;
  progress.error = e.message;
  run.errorName = name;
  log.warn({ err: e.message, name }, "run failed");
  bridge.publish(run.record.run_id, "error", { message: e.message, name, error: name });
}

/**
 * Ends the run however it went: settles a failed or cancelled run's thread ({@link settleUnfinishedRun}), copies
 * the counters into the record, stores the final run status and the thread's (idle, error, or interrupted when
 * nodes are pending), and always publishes `end`, schedules the events' cleanup and releases the run. Never
 * throws: a store error is logged.
 */
async function recordOutcome(run: ActiveRun, job: RunJob, deps: WorkerDeps, progress: RunProgress, log: Logger): Promise<void> {
  const { bridge, runs, persistence } = deps;
  const { run_id: runId, thread_id: threadId } = run.record;
  const { observation } = job;
  // Whatever fails while recording the outcome (a store error), the run must end: `finish` releases the thread,
  // or it would answer 409 to every later run until a restart.
  try {
    if (progress.status !== "success") await settleUnfinishedRun(run, job, deps, progress, log);
    const { status, checkpointer } = progress;
    if (observation?.scope.fallbacks.length) run.record.metadata = { ...run.record.metadata, model_fallbacks: observation.scope.fallbacks };
    // run_events.track_token_usage: false leaves the run's token counters at zero (DeerFlow's RunRow switch).
    const trackTokens = runContextOf({ context: progress.context }).appConfig?.run_events.track_token_usage !== false;
    Object.assign(run.record, runCounters(trackTokens ? observation?.usage : undefined, progress.before, checkpointer?.latestRoot, progress.context));
    // A thread created busy for this run is released even when the run never started (a rollback while pending).
    const releaseThread = progress.started || status === "interrupted" || job.freshThread;
    let threadStatus: ThreadStatus = status === "error" && !run.cancelAction ? "error" : "idle";
    // A run that stopped at interrupt_before/after (or a graph interrupt) leaves nodes pending: the thread waits.
    // The run's own newest checkpoint answers without reading the thread back (a store read and a parse).
    if (releaseThread && status === "success") {
      const latest = checkpointer?.latestRoot;
      const next = latest ? pendingNodes(latest.channel_values ?? {}) : ((await readThreadState(persistence.checkpointer, threadId).catch(() => null))?.next ?? []);
      if (next.length) threadStatus = "interrupted";
    }
    await progress.savingRunning;
    // Queued together, the run's outcome and its thread's release share one commit; neither waits for the other,
    // so a failed run write still releases the thread.
    const recorded = await Promise.allSettled([runs.setStatus(runId, status, progress.error), releaseThread ? persistence.threads.setStatus(threadId, threadStatus) : undefined]);
    for (const outcome of recorded) {
      if (outcome.status === "rejected") log.error({ err: (outcome.reason as Error).message }, "recording the run's outcome failed");
    }
  } catch (err) {
    log.error({ err: (err as Error).message }, "recording the run's outcome failed");
  } finally {
    progress.journal?.end(progress.status, progress.error, Object.fromEntries(RUN_COUNTER_KEYS.map((k) => [k, run.record[k]])), run.errorName);
    await progress.workspace?.finish(mayHaveChangedFiles(progress));
    const early = earlyEndFrame(run, progress);
    if (early) bridge.publish(runId, "error", early);
    bridge.publishEnd(runId);
    bridge.cleanup(runId, deps.cleanupDelayMs ?? FINISHED_RUN_RETENTION_MS);
    runs.finish(runId);
    observation?.finished(progress.status);
  }
}

/**
 * The thread side of a run that did not succeed: saves the run-start writes a failed or cancelled first model call
 * left unsaved; for a cancel with `action=rollback`, restores the checkpoint the run started from and turns the
 * status into `error` ("Rolled back by user"); gives an interrupted first turn its title. @throws a store error
 * of the run-start writes' settle (the caller logs it).
 */
async function settleUnfinishedRun(run: ActiveRun, job: RunJob, deps: WorkerDeps, progress: RunProgress, log: Logger): Promise<void> {
  const { persistence } = deps;
  const threadId = run.record.thread_id;
  const { agent, checkpointer } = progress;
  const rollback = progress.status === "interrupted" && run.cancelAction === "rollback";
  if (agent && !rollback) {
    // The first model call failed or was cancelled before ThreadData / Uploads saved their writes (they ride on
    // the model's answer): save them now, as DeerFlow's before_agent steps were saved before the model ran.
    const writes = takeUnsavedRunStartWrites(progress.context);
    if (writes) {
      await checkpointer?.settle();
      const graph = ((agent as { graph?: StateUpdatable }).graph ?? agent) as StateUpdatable;
      await graph.updateState({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, writes, "__start__").catch((err: Error) => log.warn({ err: err.message }, "saving the run-start writes of a failed run failed"));
    }
  }
  if (rollback) {
    if (progress.started) {
      try {
        await checkpointer?.settle();
        await rollbackThread(persistence.checkpointer, threadId, progress.before);
      } catch (err) {
        log.error({ err: (err as Error).message }, "rollback failed");
      }
    }
    progress.status = "error";
    progress.error = "Rolled back by user";
  }
  if (agent && !rollback && progress.started) {
    // What the user saw streamed stays in the thread (the step that streamed it never finished).
    await checkpointer?.settle();
    await keepPartialAnswer(agent, persistence.checkpointer, threadId, progress.partial, progress.status).catch((err: Error) => log.warn({ err: err.message }, "keeping the partial answer failed"));
  }
  if (progress.status === "interrupted" && agent) {
    // An interrupted first turn still names its thread (DeerFlow `_ensure_interrupted_title`).
    await titleInterruptedRun(agent, checkpointer, deps, threadId, job.input).catch((err) => log.debug({ err: (err as Error).message }, "no title for the interrupted run"));
  }
}

/**
 * The `error` frame of a run that a cancel or a shutdown ended after it started (a failure published its own in
 * {@link reportFailure}), so a truncated answer never ends with a bare `end`: LangGraph's names `UserInterrupt` /
 * `UserRollback` for a user's cancel, `ServerShutdown` for a drain. None for a run cancelled before it started
 * (nothing was streamed) or one that did not end early.
 */
function earlyEndFrame(run: ActiveRun, progress: RunProgress): { message: string; name: string; error: string } | null {
  if (!progress.started || !run.cancelAction || progress.status === "success") return null;
  const name = run.cancelReason ? "ServerShutdown" : run.cancelAction === "rollback" ? "UserRollback" : "UserInterrupt";
  const message = run.cancelReason ?? (run.cancelAction === "rollback" ? "Run rolled back by the user" : "Run cancelled by the user");
  return { message, name, error: name };
}

/** Names the thread of an interrupted first turn, once the run's checkpoint writes have settled. @throws a store error. */
async function titleInterruptedRun(agent: BuiltAgent, checkpointer: SettlingCheckpointer | undefined, deps: WorkerDeps, threadId: string, input: unknown): Promise<void> {
  await checkpointer?.settle();
  await ensureInterruptedTitle(agent, deps.persistence.checkpointer, threadId, deps.getAppConfig(), input);
}
