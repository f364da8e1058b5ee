// The one run-creation path shared by every run route (DeerFlow gateway services.start_run): validation, thread
// checks, the user's quotas (limits/run-quotas.ts) and the thread's admission (RunManager.admit, the multitask
// strategy); the run itself executes in the worker (worker.ts).
import { DEFAULT_USER_ID } from "../../agents/run-context.js";
import { BadRequestError, NotFoundError, ValidationError } from "../../errors.js";
import { assertThreadId, newId } from "../ids.js";
import { toGraphInput } from "../wire/messages.js";
import { buildRunConfig } from "./run-config.js";
import { FINISHED_RUN_RETENTION_MS, type ActiveRun } from "./run-manager.js";
import type { RunRecord } from "../persistence/repositories.js";
import { checkRunRequest, type RunCreate, type RunRequest } from "./run-request.js";
import { readThreadState } from "../threads/thread-state-reader.js";
import { runAgent, type RunJob, type WorkerDeps } from "./worker.js";
import type { RunQuotas } from "../limits/run-quotas.js";
import { withRunScope } from "../../observability/run-scope.js";
import { withPinnedAppConfig } from "../../config/app-config.js";
import { latestCheckpoint } from "../threads/rollback.js";
import { runStartCheckpoint } from "../goals/goal-head.js";
import { resumeLimitMessage, type ResumeSpec } from "../stream/run-handover.js";

export { assertThreadId, THREAD_ID_PATTERN } from "../ids.js";
export { toGraphInput, toMessages } from "../wire/messages.js";
export { rootError } from "./worker.js";
export { eventName, graphStreamModes } from "../wire/wire-events.js";

/** What {@link RunService} needs: the worker's services, and the per-user run quotas. */
export type RunServiceDeps = WorkerDeps & {
  /** Per-user run quotas (concurrent runs, daily token quota), taken right before the thread admits the run. */
  quotas?: RunQuotas;
};

/** Where a run request came from: the HTTP request id goes into the run's metadata and its log lines. */
export interface RunOrigin {
  requestId?: string;
  /** The principal's role (`admin`, `user`): the run context's `user_role`, read by tool authorization. */
  userRole?: string;
}

/** A started run and the request it came from. */
export interface StartedRun {
  run: ActiveRun;
  request: RunRequest;
}

/** Creates runs (validation, thread checks, quotas, the thread's admission) and executes them in the background. */
export class RunService {
  constructor(private readonly deps: RunServiceDeps) {}

  /**
   * Starts a run. `threadId` null means stateless: the thread comes from `config.configurable.thread_id` or is a
   * new UUID, and is created when missing. Everything that can fail is checked before the run is admitted.
   * `body` has passed `RunCreateSchema` (the route validated it; nothing parses it again here).
   * @throws ValidationError (422) for an unsupported option or stream mode, a server-owned input key, a bad thread id or agent name, or a run with nothing to do (no
   *   input, no command, no interrupted checkpoint). @throws NotFoundError (404) for an
   *   unknown thread or checkpoint. @throws BadRequestError (400) for a malformed message.
   *   @throws ConflictError (409) when the thread already has an active run. @throws RateLimitedError (429) when
   *   the user is at `limits.max_concurrent_runs_per_user` or has spent `limits.daily_token_quota` today.
   */
  async start(threadId: string | null, body: RunCreate, userId: string = DEFAULT_USER_ID, origin: RunOrigin = {}): Promise<StartedRun> {
    const request = checkRunRequest(body);
    const { threads, checkpointer } = this.deps.persistence;
    let tid: string;
    // How a stateless run's thread is created: "new" for an id this request generated (no one else can know it
    // before the run is admitted), "named" for a missing thread the request named (other requests may use it).
    let createThread: "new" | "named" | null = null;
    if (threadId === null) {
      const fromConfig = request.config?.configurable?.thread_id;
      if (fromConfig === undefined || fromConfig === null) {
        // A new UUIDv7 names no stored thread: nothing to look up.
        tid = newId();
        createThread = "new";
      } else {
        tid = fromConfig as string;
        assertThreadId(tid);
        // A stateless run may name an existing thread only if the caller owns it; another user's reads as missing.
        const existing = await threads.get(tid);
        if (existing && existing.owner_id !== userId) throw new NotFoundError(`Thread ${tid} not found`);
        if (!existing) createThread = "named";
      }
    } else {
      assertThreadId(threadId);
      tid = threadId;
      if (!(await threads.getOwned(tid, userId))) throw new NotFoundError(`Thread ${tid} not found`);
    }
    const appConfig = this.deps.getAppConfig();
    const runConfig = buildRunConfig(request, tid, { maxRecursionLimit: appConfig.max_recursion_limit, userId });
    // Set by the server only: buildRunConfig has stripped any `user_role` the caller sent.
    if (origin.userRole !== undefined) runConfig.context.user_role = origin.userRole;
    const input = toGraphInput(request);
    const checkpointId = request.checkpoint_id ?? (request.checkpoint?.checkpoint_id as string | undefined);
    if (request.checkpoint?.thread_id !== undefined && request.checkpoint.thread_id !== tid) {
      throw new BadRequestError("checkpoint thread_id does not match request thread_id");
    }
    if (checkpointId) {
      const found = await checkpointer.getTuple({ configurable: { thread_id: tid, checkpoint_ns: "", checkpoint_id: checkpointId } });
      if (!found) throw new NotFoundError(`Checkpoint ${checkpointId} not found`);
      // The app names the head it last saw; a goal set since then must stay in the run's state (goal-head.ts).
      runConfig.configurable.checkpoint_id = await runStartCheckpoint(checkpointer, tid, checkpointId);
    }
    // Nothing to run: no input, no resume command, and no checkpoint waiting at an interrupt (LangGraph's
    // EmptyInputError, answered up front instead of as a failed run).
    if ((request.input === undefined || request.input === null) && !request.command && !checkpointId) {
      const resumable = threadId !== null || (await threads.get(tid)) ? ((await readThreadState(checkpointer, tid).catch(() => null))?.next.length ?? 0) > 0 : false;
      if (!resumable) {
        throw new ValidationError("Run input is required: the thread has no interrupted run to resume", [
          { type: "missing", loc: ["body", "input"], msg: "Field required: send input (or command.resume), or resume a thread stopped at an interrupt" },
        ]);
      }
    }
    // The per-user quotas are checked and a slot taken (atomically in its store) here; released if admission fails.
    const release = await this.deps.quotas?.acquire(userId, appConfig);
    let run: ActiveRun;
    // A thread under a new id is created busy, for the run: one write where create, read back and mark busy took
    // three, and the worker reads no checkpoint of it. A named thread is created idle: a concurrent request may
    // run on it before this run is admitted, so this run treats it as any existing thread.
    let freshThread = false;
    try {
      if (createThread === "new") freshThread = await threads.createForRun(tid, userId);
      else if (createThread === "named" && (await threads.create(tid, {}, userId)).owner_id !== userId) {
        // Created by another user since the check: it reads as missing.
        throw new NotFoundError(`Thread ${tid} not found`);
      }
      run = await this.deps.runs.admit({
        threadId: tid,
        assistantId: request.assistant_id ?? "lead_agent",
        metadata: origin.requestId ? { ...runConfig.metadata, request_id: origin.requestId } : runConfig.metadata,
        kwargs: { input: request.input ?? null, config: { configurable: runConfig.configurable, recursion_limit: runConfig.recursion_limit } },
        onDisconnect: request.on_disconnect ?? "cancel",
        strategy: request.multitask_strategy ?? "reject",
        // Only a coordinator shared by several processes keeps it (one serialization per run, not per event).
        resumeSpec: this.deps.runs.resumesRuns ? JSON.stringify({ body, userId, userRole: origin.userRole, requestId: origin.requestId } satisfies ResumeSpec) : undefined,
      });
    } catch (err) {
      release?.();
      // Not admitted: the thread created for it holds no run (nothing else knows its id).
      if (freshThread) await threads.setStatus(tid, "idle").catch(() => undefined);
      throw err;
    }
    if (release) void run.done.then(release, release);
    await this.deps.bridge.open(run.record.run_id);
    const log = this.deps.logger.child({ run_id: run.record.run_id, thread_id: tid, ...(origin.requestId ? { request_id: origin.requestId } : {}) });
    const observation = this.deps.observer?.begin({ runId: run.record.run_id, threadId: tid, assistantId: run.record.assistant_id, userId, requestId: origin.requestId, log });
    this.execute(run, { input, runConfig, request, requestId: origin.requestId, log, observation, freshThread });
    return { run, request };
  }

  /** Runs an admitted (or adopted) run's worker in the background. */
  private execute(run: ActiveRun, job: RunJob): void {
    // The run scope carries the run's logger and counters into the model calls (retry log, fallbacks); the pinned
    // config gives the whole run the config version it starts with (its first read, when the worker begins).
    const execute = () => withPinnedAppConfig(() => runAgent(run, job, this.deps));
    void (job.observation ? withRunScope(job.observation.scope, execute) : execute());
  }

  /**
   * Resumes a run this process took over from one that died or left (docs/durable-runs.md): same run id, same
   * request; the graph continues from the run's last checkpoint (input null) when the run wrote one, else starts
   * again from the request's input. The step that was under way is run again. The run's metadata gets `resumed`
   * (how many times). A run no longer in flight in the store (cancelled meanwhile) is left as it is.
   * @param specJson the run's {@link ResumeSpec}. @param resumedBefore resumes before this one.
   * @throws a store error (the caller logs it).
   */
  async resume(runId: string, specJson: string, resumedBefore: number): Promise<void> {
    const spec = JSON.parse(specJson) as ResumeSpec;
    const { runs, persistence, bridge } = this.deps;
    const stored = await persistence.runs.get(runId);
    if (!stored || (stored.status !== "pending" && stored.status !== "running")) return;
    const request = checkRunRequest(spec.body as RunCreate);
    const tid = stored.thread_id;
    const runConfig = buildRunConfig(request, tid, { maxRecursionLimit: this.deps.getAppConfig().max_recursion_limit, userId: spec.userId });
    if (spec.userRole !== undefined) runConfig.context.user_role = spec.userRole;
    const latest = await latestCheckpoint(persistence.checkpointer, tid);
    const own = (latest?.metadata as Record<string, unknown> | undefined)?.writer_run_id === runId;
    const checkpointId = request.checkpoint_id ?? (request.checkpoint?.checkpoint_id as string | undefined);
    if (!own && checkpointId) runConfig.configurable.checkpoint_id = checkpointId;
    const run = await runs.adopt({ ...stored, metadata: { ...stored.metadata, resumed: resumedBefore + 1 } });
    await (bridge.reopen ? bridge.reopen(runId) : bridge.open(runId));
    const log = this.deps.logger.child({ run_id: runId, thread_id: tid, attempt: resumedBefore + 2 });
    const observation = this.deps.observer?.begin({ runId, threadId: tid, assistantId: stored.assistant_id, userId: spec.userId, requestId: spec.requestId, log });
    this.execute(run, { input: own ? null : toGraphInput(request), runConfig, request, requestId: spec.requestId, log, observation, attempt: resumedBefore + 2 });
  }

  /**
   * One process after a restart (docs/durable-runs.md): resumes every run the previous process left in flight with a
   * resume spec (it crashed; a finished or cancelled run has none), each at most `maxResumes` times: past that
   * it is marked `error` with the reason. The resume count is stored before the run starts again, so a run that
   * crashes the process each time still stops. @returns how many runs were resumed. @throws a store error.
   */
  async resumeAfterRestart(maxResumes: number): Promise<number> {
    const { resumes, runs } = this.deps.persistence;
    if (!resumes || !this.deps.runs.resumesRuns) return 0;
    let resumed = 0;
    for (const orphan of await resumes.orphans()) {
      if (orphan.resumes >= maxResumes) {
        const record = await runs.get(orphan.run_id);
        const error = resumeLimitMessage(orphan.resumes);
        if (record) await runs.save({ ...record, status: "error", error, updated_at: new Date().toISOString() });
        await resumes.delete(orphan.run_id);
        // A client reconnecting to its stream learns why it ended (as the Redis coordinator's reaper says it).
        const { bridge } = this.deps;
        await bridge.open(orphan.run_id);
        bridge.publish(orphan.run_id, "error", { message: error, name: "ResumeLimitExceeded", error: "ResumeLimitExceeded" });
        bridge.publishEnd(orphan.run_id);
        bridge.cleanup(orphan.run_id, this.deps.cleanupDelayMs ?? FINISHED_RUN_RETENTION_MS);
        continue;
      }
      await resumes.bump(orphan.run_id);
      this.deps.logger.warn({ run_id: orphan.run_id, thread_id: orphan.thread_id, attempt: orphan.resumes + 2 }, "resuming a run a restart cut short");
      await this.resume(orphan.run_id, orphan.spec, orphan.resumes);
      resumed++;
    }
    return resumed;
  }

  /**
   * Waits until the run has finished and returns what `/wait` and `/join` answer: the thread's final state
   * values, or `{__error__: {error, message}}` when the run failed (LangGraph API contract).
   */
  async result(run: ActiveRun): Promise<Record<string, unknown>> {
    await run.done;
    return this.resultOf(run.record, run.errorName);
  }

  /** The `/wait` answer for a finished run record (state values, or `__error__`). */
  async resultOf(record: RunRecord, errorName?: string): Promise<Record<string, unknown>> {
    if (record.status === "error") return { __error__: { error: errorName ?? "RunError", message: record.error ?? "run failed" } };
    return (await readThreadState(this.deps.persistence.checkpointer, record.thread_id)).values;
  }
}
