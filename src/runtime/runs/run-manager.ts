// Port of DeerFlow's RunManager: run records, per-thread admission with multitask strategies, and cancellation.
import { ConflictError, NotFoundError } from "../../errors.js";
import type { RunRecord, RunRepository } from "../persistence/repositories.js";
import type { CancelAction, MultitaskStrategy, RunStatus } from "../wire/wire-enums.js";
import { emptyRunCounters } from "./run-counters.js";
import { newId } from "../ids.js";
import type { ResumeStore } from "../persistence/sqlite/resume-store.js";

export type { CancelAction, MultitaskStrategy, RunStatus } from "../wire/wire-enums.js";

/** A run in this process, plus what is needed to control it. */
export interface ActiveRun {
  record: RunRecord;
  /** Aborts the run's graph (cancel, client disconnect with `on_disconnect: cancel`, shutdown). */
  controller: AbortController;
  /** How the run was cancelled, once it was. */
  cancelAction?: CancelAction;
  /** Why it was cancelled when not by its user (shutdown): the message of its stream's `error` frame. */
  cancelReason?: string;
  /** Settles when every run admitted before this one on the thread has finished. */
  predecessors: Promise<void>;
  /** Settles when the worker has finished (any terminal status, after cleanup). */
  done: Promise<void>;
  /** Class name of the error a failed run raised (for `__error__` answers). */
  errorName?: string;
  /** True once `done` has settled. */
  finished: boolean;
  /**
   * Set when this process leaves and hands the run to another (DistributedRunManager.handOver): the worker stops
   * without recording an outcome or ending the stream; the process that resumes it does both.
   */
  handedOver?: boolean;
  onDisconnect: "cancel" | "continue";
}

/**
 * How long (ms) a finished run's events stay replayable (DeerFlow's worker: `bridge.cleanup(run_id, delay=60)`),
 * and how long another gateway process's cancel of a just-finished run is still acknowledged here.
 */
export const FINISHED_RUN_RETENTION_MS = 60_000;

const TERMINAL: ReadonlySet<RunStatus> = new Set(["success", "error", "timeout", "interrupted"]);

/** True for `success`, `error`, `timeout` and `interrupted`. */
export const isTerminal = (status: RunStatus) => TERMINAL.has(status);

/** Input of {@link RunManager.admit}. */
export interface AdmitInput {
  threadId: string;
  assistantId: string;
  metadata: Record<string, unknown>;
  kwargs: RunRecord["kwargs"];
  onDisconnect: "cancel" | "continue";
  strategy: MultitaskStrategy;
  /**
   * What another process needs to resume the run should this one die or leave (JSON `ResumeSpec`, see
   * stream/run-handover.ts); kept by the Redis coordinator while the run is in flight, ignored by one process.
   */
  resumeSpec?: string;
}

/**
 * Keeps run records (durably, in the {@link RunRepository}) and admits runs per thread. A run counts as in flight until
 * its worker has finished (a cancelled run still finalising blocks `reject`). Strategies: `reject` (409),
 * `interrupt` / `rollback` (cancel the in-flight runs with that action, then start after they finish),
 * `enqueue` (start after the in-flight runs finish).
 */
export class RunManager {
  protected readonly live = new Map<string, ActiveRun & { resolveDone: () => void }>();
  protected readonly byThread = new Map<string, string[]>();

  /**
   * Whether runs admitted here can be resumed, by another process or by this one after a restart (they then need
   * {@link AdmitInput.resumeSpec}).
   */
  readonly resumesRuns: boolean = false;

  /**
   * @param store Where run records live (orphans of a previous process are recovered when it is opened).
   * @param resumes Where in-flight runs' resume specs are kept so that a restart after a crash resumes them (one
   *   process on SQLite, docs/durable-runs.md); none: a crash interrupts them.
   */
  constructor(
    protected readonly store: RunRepository,
    private readonly resumes?: ResumeStore,
  ) {
    this.resumesRuns = Boolean(resumes);
  }

  protected inFlightOn(threadId: string): ActiveRun[] {
    return (this.byThread.get(threadId) ?? []).map((id) => this.live.get(id)!).filter((r) => r && !r.finished);
  }

  /**
   * Admits a run (status `pending`) according to `strategy`. Atomic: the run is registered before the (async)
   * store write, so a concurrent admission on the thread sees it, and unregistered again when the store refuses the
   * record; in-flight runs are cancelled only once the record is stored, so a store error leaves the thread as it was.
   * @throws whatever the store throws (nothing left registered then).
   * @throws ConflictError "Thread <id> already has an active run" for `reject` when a run is in flight.
   */
  async admit(input: AdmitInput): Promise<ActiveRun> {
    const inFlight = this.inFlightOn(input.threadId);
    if (inFlight.length && input.strategy === "reject") throw new ConflictError(`Thread ${input.threadId} already has an active run`);
    const run = this.register(input, newId(), Promise.all(inFlight.map((r) => r.done)).then(() => undefined));
    const runId = run.record.run_id;
    try {
      // Both join the same group commit: the spec costs no commit of its own.
      await Promise.all([this.store.save(run.record), input.resumeSpec && this.resumes ? this.resumes.put(runId, input.resumeSpec) : undefined]);
    } catch (err) {
      this.unregister(runId);
      void this.resumes?.delete(runId).catch(() => undefined);
      throw err;
    }
    if (input.strategy === "interrupt" || input.strategy === "rollback") {
      for (const r of inFlight) this.cancelRun(r, input.strategy);
    }
    return run;
  }

  /** Creates the control object of an admitted run and tracks it in this process (not stored here). */
  protected register(input: AdmitInput, runId: string, predecessors: Promise<void>): ActiveRun {
    const now = new Date().toISOString();
    const record: RunRecord = {
      run_id: runId,
      thread_id: input.threadId,
      assistant_id: input.assistantId,
      status: "pending",
      metadata: input.metadata,
      kwargs: input.kwargs,
      multitask_strategy: input.strategy,
      created_at: now,
      updated_at: now,
      ...emptyRunCounters(),
    };
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const run = { record, controller: new AbortController(), predecessors, done, finished: false, onDisconnect: input.onDisconnect, resolveDone };
    this.live.set(record.run_id, run);
    this.byThread.set(input.threadId, [...(this.byThread.get(input.threadId) ?? []), record.run_id]);
    return run;
  }

  /**
   * Takes a stored in-flight run (same id, same record) into this process to run it again: a resume after its
   * process died or handed it over. It waits for no predecessor (its admission already did), and a client that
   * disconnects from it never cancels it (the client that started it is gone).
   */
  async adopt(stored: RunRecord): Promise<ActiveRun> {
    const input: AdmitInput = { threadId: stored.thread_id, assistantId: stored.assistant_id, metadata: stored.metadata, kwargs: stored.kwargs, onDisconnect: "continue", strategy: stored.multitask_strategy };
    const run = this.register(input, stored.run_id, Promise.resolve());
    run.record.created_at = stored.created_at;
    return run;
  }

  /** Forgets a run whose admission failed; anything queued behind it goes on. */
  protected unregister(runId: string): void {
    const run = this.forget(runId);
    if (!run) return;
    run.finished = true;
    run.resolveDone();
  }

  /** Updates a run's status (and error), durably. */
  async setStatus(runId: string, status: RunStatus, error?: string): Promise<void> {
    const run = this.live.get(runId);
    if (!run) return;
    run.record.status = status;
    run.record.updated_at = new Date().toISOString();
    if (error !== undefined) run.record.error = error;
    await this.store.save(run.record);
  }

  /**
   * Marks the worker finished: the thread admits the next run, `done` settles and this process forgets the run.
   * Late cancels, joins and reads answer from the stored record (the worker stores the final status first). Holding
   * the control object for a while instead cost ~2.5 KB a run (record, request metadata and kwargs, each metadata
   * object with a hidden class of its own): at a few hundred runs per second and a minute, tens of MB of old space
   * that every full GC had to mark.
   */
  finish(runId: string): void {
    // Only runs whose worker has not finished are held (finish and unregister both forget).
    const run = this.forget(runId);
    if (!run) return;
    run.finished = true;
    run.resolveDone();
    // Its outcome is stored: nothing to resume after a restart.
    void this.resumes?.delete(runId).catch(() => undefined);
  }

  /** Drops a run's control object and its place in its thread's admission list; returns it. */
  private forget(runId: string): (ActiveRun & { resolveDone: () => void }) | undefined {
    const run = this.live.get(runId);
    if (!run) return undefined;
    this.live.delete(runId);
    const ids = this.byThread.get(run.record.thread_id)?.filter((id) => id !== runId);
    if (ids?.length) this.byThread.set(run.record.thread_id, ids);
    else this.byThread.delete(run.record.thread_id);
    return run;
  }

  /** Cancels a run of this process; `reason` when not its user's cancel (the `error` frame's message). */
  protected cancelRun(run: ActiveRun, action: CancelAction, reason?: string): void {
    if (run.cancelAction || run.finished) return;
    run.cancelAction = action;
    run.cancelReason = reason;
    // First: a cancelled run is never resumed, even when the process dies before the worker has stopped.
    void this.resumes?.delete(run.record.run_id).catch(() => undefined);
    if (action === "interrupt") void this.setStatus(run.record.run_id, "interrupted").catch(() => undefined);
    run.controller.abort(new Error(`Run cancelled (${action})`));
  }

  /**
   * Cancels a run (DeerFlow `cancel_run`): `interrupt` marks it `interrupted` at once; `rollback` ends it as `error`
   * once its writes are undone. Cancelling an already interrupted run is a no-op.
   * @param options.action `interrupt` (default) or `rollback`. @param options.wait When true, resolves only after
   *   the worker has finished (default false).
   * @throws NotFoundError for an unknown run (or one of another thread); ConflictError "Run <id> is not
   *   cancellable (status: <s>)" for a run that already succeeded or failed.
   */
  async cancel(threadId: string, runId: string, options: { action?: CancelAction; wait?: boolean } = {}): Promise<void> {
    const action = options.action ?? "interrupt";
    const wait = options.wait ?? false;
    const run = this.live.get(runId);
    const record = run?.record ?? (await this.store.get(runId));
    if (!record || record.thread_id !== threadId) throw new NotFoundError(`Run ${runId} not found`);
    if (!run || run.finished) {
      if (!run && (record.status === "pending" || record.status === "running")) return this.cancelElsewhere(record, action, wait);
      if (record.status === "interrupted" || record.status === "pending" || record.status === "running") return;
      throw new ConflictError(`Run ${runId} is not cancellable (status: ${record.status})`);
    }
    if (isTerminal(run.record.status) && run.record.status !== "interrupted") {
      throw new ConflictError(`Run ${runId} is not cancellable (status: ${run.record.status})`);
    }
    this.cancelRun(run, action);
    if (wait) await run.done;
  }

  /**
   * Cancels a run this process does not hold. A single process holds every run it admitted, so a stored
   * in-flight run without a control object is an orphan: nothing to stop. The Redis coordinator overrides this.
   */
  protected async cancelElsewhere(_record: RunRecord, _action: CancelAction, _wait: boolean): Promise<void> {}

  /**
   * Resolves once a run no longer runs anywhere (its worker finished, here or in another process). Used by
   * `join` for a run this process does not hold.
   */
  async settled(runId: string): Promise<void> {
    await this.live.get(runId)?.done;
  }

  /**
   * The control object of a run admitted in this process whose worker has not finished (only when it belongs to
   * `threadId`, if given). A finished run has none: read its record with {@link get}.
   */
  getActive(runId: string, threadId?: string): ActiveRun | undefined {
    const run = this.live.get(runId);
    return run && (threadId === undefined || run.record.thread_id === threadId) ? run : undefined;
  }

  /** The run record (live while its worker runs, else stored), only when it belongs to `threadId` (when given). */
  async get(runId: string, threadId?: string): Promise<RunRecord | undefined> {
    const record = this.live.get(runId)?.record ?? (await this.store.get(runId)) ?? undefined;
    return record && (threadId === undefined || record.thread_id === threadId) ? record : undefined;
  }

  /** Runs of a thread, newest first. */
  list(threadId: string, options: { limit?: number; offset?: number; status?: RunStatus } = {}): Promise<RunRecord[]> {
    return this.store.list(threadId, options);
  }

  /** Whether a thread has a run whose worker has not finished. */
  async hasInFlight(threadId: string): Promise<boolean> {
    return this.inFlightOn(threadId).length > 0;
  }

  /** Runs whose worker has not finished. */
  inFlight(): ActiveRun[] {
    return [...this.live.values()].filter((r) => !r.finished);
  }

  /** Cancels every in-flight run (`interrupt`) and waits for them, at most `budgetMs` (ms). Used on shutdown. */
  async drain(budgetMs: number): Promise<void> {
    const runs = this.inFlight();
    for (const run of runs) this.cancelRun(run, "interrupt", "The gateway shut down before the run finished");
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(runs.map((r) => r.done)), new Promise((r) => (timer = setTimeout(r, budgetMs)))]);
    clearTimeout(timer);
  }

  /** Deletes one finished run's record. */
  async delete(runId: string): Promise<void> {
    this.forget(runId);
    await this.store.delete(runId);
  }

  /**
   * Deletes a thread's run records (thread deletion; finished runs hold nothing in this process). A run admitted on
   * the thread while it was being deleted keeps its control object until its worker finishes: dropping it would
   * leave its `done` unsettled and everything waiting on it (joins, runs queued behind it) hanging.
   */
  async forgetThread(threadId: string): Promise<void> {
    await this.store.deleteThread(threadId);
  }
}
