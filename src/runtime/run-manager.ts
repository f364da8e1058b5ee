// Run records and per-thread admission (the in-memory part of DeerFlow's RunManager).
import { randomUUID } from "node:crypto";
import { ConflictError } from "../errors.js";

/** LangGraph run status. */
export type RunStatus = "pending" | "running" | "success" | "error" | "timeout" | "interrupted";
/** Multitask strategy of a run (only `reject` is admitted by this release). */
export type MultitaskStrategy = "reject" | "interrupt" | "rollback" | "enqueue";

/** The Run resource as the API returns it (spec gateway.md 1.3). Timestamps are ISO strings. */
export interface RunRecord {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: Record<string, unknown>;
  kwargs: { input: unknown; config: unknown };
  multitask_strategy: MultitaskStrategy;
  created_at: string;
  updated_at: string;
  error?: string;
}

/** A run plus what the process needs to control it. */
export interface ActiveRun {
  record: RunRecord;
  /** Aborts the run's graph (cancel, client disconnect with `on_disconnect: cancel`, shutdown). */
  controller: AbortController;
  /** Settles when the worker has finished (any terminal status). */
  done: Promise<void>;
  onDisconnect: "cancel" | "continue";
}

const TERMINAL: ReadonlySet<RunStatus> = new Set(["success", "error", "timeout", "interrupted"]);

/** True for `success`, `error`, `timeout` and `interrupted`. */
export const isTerminal = (status: RunStatus) => TERMINAL.has(status);

/** Keeps run records and admits at most one active run per thread. */
export class RunManager {
  private readonly runs = new Map<string, ActiveRun>();
  private readonly activeByThread = new Map<string, string>();

  /**
   * Admits a run on `threadId` (status `pending`).
   * @throws ConflictError "Thread <id> already has an active run" when a pending or running run exists.
   */
  admit(input: { threadId: string; assistantId: string; metadata: Record<string, unknown>; kwargs: RunRecord["kwargs"]; onDisconnect: "cancel" | "continue" }): ActiveRun {
    const current = this.activeByThread.get(input.threadId);
    if (current && !isTerminal(this.runs.get(current)!.record.status)) throw new ConflictError(`Thread ${input.threadId} already has an active run`);
    const now = new Date().toISOString();
    const record: RunRecord = {
      run_id: randomUUID(),
      thread_id: input.threadId,
      assistant_id: input.assistantId,
      status: "pending",
      metadata: input.metadata,
      kwargs: input.kwargs,
      multitask_strategy: "reject",
      created_at: now,
      updated_at: now,
    };
    let resolveDone!: () => void;
    const run: ActiveRun = { record, controller: new AbortController(), done: new Promise((r) => (resolveDone = r)), onDisconnect: input.onDisconnect };
    (run as ActiveRun & { resolveDone: () => void }).resolveDone = resolveDone;
    this.runs.set(record.run_id, run);
    this.activeByThread.set(input.threadId, record.run_id);
    return run;
  }

  /** Moves a run to `status` (and records `error`); a terminal status releases the thread and settles `done`. */
  setStatus(runId: string, status: RunStatus, error?: string): void {
    const run = this.runs.get(runId);
    if (!run) return;
    run.record.status = status;
    run.record.updated_at = new Date().toISOString();
    if (error !== undefined) run.record.error = error;
    if (isTerminal(status)) {
      if (this.activeByThread.get(run.record.thread_id) === runId) this.activeByThread.delete(run.record.thread_id);
      (run as ActiveRun & { resolveDone: () => void }).resolveDone();
    }
  }

  /** The run, only when it belongs to `threadId` (when given). */
  get(runId: string, threadId?: string): ActiveRun | undefined {
    const run = this.runs.get(runId);
    return run && (threadId === undefined || run.record.thread_id === threadId) ? run : undefined;
  }

  /** Runs of a thread, newest first. */
  list(threadId: string): RunRecord[] {
    return [...this.runs.values()].filter((r) => r.record.thread_id === threadId).map((r) => r.record).reverse();
  }

  /** Runs not yet terminal. */
  inFlight(): ActiveRun[] {
    return [...this.runs.values()].filter((r) => !isTerminal(r.record.status));
  }
}
