// A per-run view of the checkpointer that remembers the writes the run's graph started, so a rollback can wait
// for them: LangGraph writes checkpoints asynchronously, and a write still in flight when a run is cancelled
// would otherwise land after the rollback and bring the cancelled run's input back.
import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from "@langchain/langgraph-checkpoint";

/**
 * Delegates everything to `inner`; `settle()` resolves once every write started through this view has finished.
 * For a thread created by this run (`fresh`), reads before the run's first write answer "no checkpoint" without a
 * query: LangGraph's loop reads the thread's latest checkpoint when it starts, and nothing can be there yet.
 */
export class SettlingCheckpointer extends BaseCheckpointSaver {
  private readonly pending = new Set<Promise<unknown>>();
  /** The newest root-namespace checkpoint this run's graph saved (what the thread's state now reads), if any. */
  latestRoot?: Checkpoint;
  /** True until the first write through this view, for a thread nobody else can have written. */
  private empty: boolean;

  /**
   * @param inner the process's checkpointer.
   * @param options.fresh the thread was created for this run under an id the request generated (no one else can
   *   know it before the run's first event), so it has no checkpoint until this run writes one.
   * @param options.runId the run writing through this view: stored as `writer_run_id` in each checkpoint's metadata,
   *   so a resume after a crash knows the thread's last checkpoint is the run's own. Not `run_id`: LangGraph treats
   *   an invocation whose `config.metadata.run_id` matches the last checkpoint's `run_id` as a resume and drops its
   *   input, which would swallow the hidden turns a goal continuation sends within one run.
   */
  constructor(
    private readonly inner: BaseCheckpointSaver,
    options: { fresh?: boolean; runId?: string } = {},
  ) {
    super(inner.serde);
    this.empty = options.fresh === true;
    this.runId = options.runId;
  }

  private readonly runId: string | undefined;

  private track<T>(promise: Promise<T>): Promise<T> {
    this.pending.add(promise);
    const done = () => this.pending.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** Waits for the writes in flight (and those they start), whatever their outcome. Never throws. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (this.empty) return Promise.resolve(undefined);
    return this.inner.getTuple(config);
  }

  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    // LangGraph hands each put its own copy of the checkpoint, so keeping the reference is safe.
    if (!config.configurable?.checkpoint_ns) this.latestRoot = checkpoint;
    this.empty = false;
    const tagged = this.runId ? { ...metadata, writer_run_id: this.runId } : metadata;
    return this.track(this.inner.put(config, checkpoint, tagged, newVersions));
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    this.empty = false;
    return this.track(this.inner.putWrites(config, writes, taskId, taskPath));
  }

  deleteThread(threadId: string): Promise<void> {
    return this.track(this.inner.deleteThread(threadId));
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current as never) as number;
  }
}
