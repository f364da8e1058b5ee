// Restoring a thread to its pre-run checkpoint (DeerFlow cancel action `rollback`).
import { copyCheckpoint, emptyCheckpoint, uuid6, type BaseCheckpointSaver, type CheckpointTuple } from "@langchain/langgraph-checkpoint";

/** The thread's newest root checkpoint, or undefined. */
export function latestCheckpoint(checkpointer: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple | undefined> {
  return checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
}

/**
 * Gives a new thread an empty checkpoint (step -1, no channel values), as the LangGraph API does, so its state has
 * a checkpoint id before the first run. No-op when the thread already has one.
 */
export async function ensureInitialCheckpoint(checkpointer: BaseCheckpointSaver, threadId: string): Promise<void> {
  if (await latestCheckpoint(checkpointer, threadId)) return;
  const checkpoint = emptyCheckpoint();
  await checkpointer.put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, checkpoint, { source: "input", step: -1, parents: {} } as never, {});
}

/**
 * Undoes everything a run wrote: when the thread had no checkpoint before the run, all its checkpoints are
 * deleted; otherwise the pre-run checkpoint is copied as a new newest checkpoint (a fork of its lineage), so the
 * next run and `GET state` see the state as it was. Mirrors DeerFlow's rollback
 * (`test_cancel_rollback_restores_pre_run_checkpoint`).
 */
export async function rollbackThread(checkpointer: BaseCheckpointSaver, threadId: string, before: CheckpointTuple | undefined): Promise<void> {
  if (!before) {
    await checkpointer.deleteThread(threadId);
    return;
  }
  const latest = await latestCheckpoint(checkpointer, threadId);
  if (latest?.checkpoint.id === before.checkpoint.id) return;
  const restored = copyCheckpoint(before.checkpoint);
  restored.id = uuid6(-1);
  restored.ts = new Date().toISOString();
  const step = Number((latest?.metadata as { step?: number } | undefined)?.step ?? 0) + 1;
  await checkpointer.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: latest?.checkpoint.id } },
    restored,
    { source: "update", step, parents: {}, rolled_back_to: before.checkpoint.id } as never,
    restored.channel_versions,
  );
}
