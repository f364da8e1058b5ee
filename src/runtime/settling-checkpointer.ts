// A per-run view of the checkpointer that remembers the writes the run's graph started, so a rollback can wait
// for them: LangGraph writes checkpoints asynchronously, and a write still in flight when a run is cancelled
// would otherwise land after the rollback and bring the cancelled run's input back.
import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type ChannelVersions, type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, type PendingWrite } from "@langchain/langgraph-checkpoint";

/** Delegates everything to `inner`; `settle()` resolves once every write started through this view has finished. */
export class SettlingCheckpointer extends BaseCheckpointSaver {
  private readonly pending = new Set<Promise<unknown>>();
  /** The newest root-namespace checkpoint this run's graph saved (what the thread's state now reads), if any. */
  latestRoot?: Checkpoint;

  constructor(private readonly inner: BaseCheckpointSaver) {
    super(inner.serde);
  }

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
    return this.inner.getTuple(config);
  }

  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    // LangGraph hands each put its own copy of the checkpoint, so keeping the reference is safe.
    if (!config.configurable?.checkpoint_ns) this.latestRoot = checkpoint;
    return this.track(this.inner.put(config, checkpoint, metadata, newVersions));
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return this.track(this.inner.putWrites(config, writes, taskId, taskPath));
  }

  deleteThread(threadId: string): Promise<void> {
    return this.track(this.inner.deleteThread(threadId));
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current as never) as number;
  }
}
