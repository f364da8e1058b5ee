// A run that names the thread head its client last saw must not drop a goal set since then. The DeerFlow web app
// (LangGraph SDK `useStream` with `fetchStateHistory`) sends every message with an implicit `checkpoint`: the head
// it fetched when the previous run ended. `/goal` then writes the goal as a newer checkpoint and submits at once,
// so that run would fork from the pre-goal checkpoint and lose the goal (issue 47: "the run never continues").
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph";
import { latestCheckpoint } from "../threads/rollback.js";

/** How many newer checkpoints are looked at: goal writes come one per `/goal`, never many in a row. */
const MAX_GOAL_WRITES = 16;

/**
 * True when `tuple` is an out-of-run state update (PUT/DELETE goal, the goal loop) that changed only the `goal`
 * channel against its `parent`: LangGraph JS records no `writes` in an update's metadata, so the channel versions
 * tell what it wrote.
 */
function isGoalOnlyUpdate(tuple: CheckpointTuple, parent: CheckpointTuple): boolean {
  if ((tuple.metadata as { source?: string } | undefined)?.source !== "update") return false;
  const now = tuple.checkpoint.channel_versions;
  const before = parent.checkpoint.channel_versions;
  const changed = [...new Set([...Object.keys(now), ...Object.keys(before)])].filter((k) => now[k] !== before[k]);
  return changed.length > 0 && changed.every((k) => k === "goal");
}

/**
 * The checkpoint a run that names `checkpointId` starts from: the thread's head when every checkpoint after
 * `checkpointId` up to the head is a goal-only update (the client's view is stale by goal writes alone, so the run
 * continues the same conversation with the goal in its state); otherwise `checkpointId` itself (a real branch:
 * regenerate, edit, fork from an older turn). Reads at most {@link MAX_GOAL_WRITES} checkpoints.
 * @returns a checkpoint id of `threadId`.
 */
export async function runStartCheckpoint(checkpointer: BaseCheckpointSaver, threadId: string, checkpointId: string): Promise<string> {
  const head = await latestCheckpoint(checkpointer, threadId);
  if (!head || head.checkpoint.id === checkpointId) return checkpointId;
  let tuple = head;
  for (let i = 0; i < MAX_GOAL_WRITES && tuple.parentConfig; i++) {
    const parent = await checkpointer.getTuple(tuple.parentConfig);
    if (!parent || !isGoalOnlyUpdate(tuple, parent)) return checkpointId;
    if (parent.checkpoint.id === checkpointId) return head.checkpoint.id;
    tuple = parent;
  }
  return checkpointId;
}
