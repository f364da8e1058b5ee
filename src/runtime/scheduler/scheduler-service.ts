// The scheduled-task poller (DeerFlow app/scheduler/service.py ScheduledTaskService): each process polls the
// database, claims due tasks atomically (task-store `claimDue`) and fires them (dispatch.ts). Nothing fires from a
// timer of its own: a task fires in the process whose claim got it, so several processes fire each due task once.
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { SchedulerConfig } from "../../config/scheduler-config.js";
import { newId } from "../ids.js";
import type { RunRepository } from "../persistence/repositories.js";
import { dispatchTask, finishRun, RESTART_RECOVERY_ERROR, taskRunStatusOf, type DispatchDeps, type DispatchResult, type LaunchRun } from "./dispatch.js";
import type { ScheduledTask, ScheduledTaskStore } from "./task-store.js";

/** Written on task runs whose run a stopped peer left behind (multi-instance reconciliation). */
const LEASE_RECOVERY_ERROR = "interrupted: the owning gateway stopped renewing its run lease";

/** What the service needs. */
export interface SchedulerServiceDeps {
  store: ScheduledTaskStore;
  /** The run table: how multi-instance reconciliation sees that a peer's run has ended. */
  runs: RunRepository;
  launch: LaunchRun;
  /** The `scheduler` section as it was at start-up (restart-only). */
  config: SchedulerConfig;
  logger: Logger;
  /** The clock (tests move it); default `() => new Date()`. */
  now?: () => Date;
  /** Poll interval in ms; default `poll_interval_seconds` x 1000 (tests shorten it). */
  pollMs?: number;
}

/** The poller and the trigger path of one process. */
export class SchedulerService {
  /** This process's lease owner (host and a random id). */
  readonly leaseOwner = `${hostname()}:${newId()}`;
  readonly now: () => Date;
  private readonly pollMs: number;
  private stopped = true;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private readonly dispatch: DispatchDeps;

  constructor(private readonly deps: SchedulerServiceDeps) {
    this.now = deps.now ?? (() => new Date());
    this.pollMs = deps.pollMs ?? deps.config.poll_interval_seconds * 1000;
    // A finished run frees budget: poll at once, so a backlog of due tasks drains at run speed, not poll speed.
    this.dispatch = { store: deps.store, launch: deps.launch, leaseOwner: this.leaseOwner, maxConcurrentRuns: deps.config.max_concurrent_runs, onFinished: () => this.wakeUp?.() };
  }

  /** The `scheduler` section in force. */
  get config(): SchedulerConfig {
    return this.deps.config;
  }

  /** Fires `task` now by hand (the trigger route). */
  trigger(task: ScheduledTask): Promise<DispatchResult> {
    return dispatchTask(this.dispatch, task, this.now(), "manual");
  }

  /**
   * Claims the due tasks within the free `max_concurrent_runs` budget and fires them; resolves how many it claimed.
   */
  async pollOnce(): Promise<number> {
    const now = this.now();
    const { lease_seconds: lease, max_concurrent_runs: max, multi_instance: multi } = this.deps.config;
    if (multi) await this.reconcile(now);
    const claimed = await this.deps.store.claimDue(now.toISOString(), this.leaseOwner, new Date(now.getTime() + lease * 1000).toISOString(), max);
    await Promise.all(claimed.map((task) => dispatchTask(this.dispatch, task, now, "scheduled").catch((err) => this.deps.logger.error({ err, task_id: task.id }, "scheduled task dispatch failed"))));
    return claimed.length;
  }

  /** Sweeps what a previous life left active, then polls until {@link stop}. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    if (this.deps.config.multi_instance) await this.reconcile(this.now());
    else await this.sweepAfterRestart();
    this.loop = this.run();
  }

  /** Stops polling (runs already started continue); resolves when the loop has exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
    this.loop = null;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.pollOnce();
      } catch (err) {
        // A transient database error must not end the poller for the life of the process.
        this.deps.logger.warn({ err }, "scheduled task poll failed; retrying next interval");
      }
      if (this.stopped) break;
      // Next poll at the interval, or as soon as a scheduled run finishes (it freed budget).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.pollMs);
        timer.unref?.();
        this.wakeUp = done;
        function done() {
          clearTimeout(timer);
          resolve();
        }
      });
      this.wakeUp = null;
    }
  }

  /** Single instance: nothing of this process runs yet, so every active task run is a leftover of a crash. */
  private async sweepAfterRestart(): Promise<void> {
    const stale = await this.deps.store.activeRuns();
    const at = this.now().toISOString();
    for (const run of stale) await this.deps.store.updateRun(run.id, { status: "interrupted", error: RESTART_RECOVERY_ERROR, finished_at: at });
    const stuck = await this.deps.store.cancelStuckOnce(RESTART_RECOVERY_ERROR);
    if (stale.length || stuck) this.deps.logger.warn({ task_runs: stale.length, once_tasks: stuck }, "scheduled task runs interrupted by a restart were finalised");
  }

  /**
   * Multi-instance: an active task run whose agent run is terminal in the shared run table (its process died and a
   * peer marked it) is finalised from that record; one never launched and older than the lease is interrupted.
   */
  private async reconcile(now: Date): Promise<void> {
    const leaseMs = this.deps.config.lease_seconds * 1000;
    for (const row of await this.deps.store.activeRuns()) {
      const task = await this.deps.store.getTask(row.task_id);
      if (!task) continue;
      if (row.run_id) {
        const record = await this.deps.runs.get(row.run_id);
        if (record && taskRunStatusOf(record.status)) await finishRun(this.dispatch, task, row.id, row.run_id, { status: record.status, error: record.error });
      } else if (now.getTime() - Date.parse(row.created_at) > leaseMs) {
        await this.deps.store.updateRun(row.id, { status: "interrupted", error: LEASE_RECOVERY_ERROR, finished_at: now.toISOString() });
        await this.deps.store.cancelStuckOnce(LEASE_RECOVERY_ERROR, [task.id]);
      }
    }
  }
}
