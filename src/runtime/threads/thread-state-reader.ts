// Reads a thread's state straight from its newest checkpoint, in the LangGraph API's ThreadState shape.
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph";
import { NotFoundError } from "../../errors.js";
import { serializeValues } from "../wire/serialization.js";

/** LangGraph checkpoint reference: `{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}`. */
export interface CheckpointRef {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: null;
}

/** The `GET /threads/{id}/state` body: LangGraph's shape plus DeerFlow's flat ids. */
export interface ThreadStateResponse {
  values: Record<string, unknown>;
  next: string[];
  tasks: { id: string; name: string; interrupts: unknown[] }[];
  metadata: Record<string, unknown>;
  created_at: string | null;
  checkpoint: CheckpointRef | null;
  parent_checkpoint: CheckpointRef | null;
  checkpoint_id: string | null;
  parent_checkpoint_id: string | null;
  interrupts: unknown[];
}

const ref = (threadId: string, id: string | undefined): CheckpointRef | null =>
  id ? { thread_id: threadId, checkpoint_ns: "", checkpoint_id: id, checkpoint_map: null } : null;

/**
 * The nodes a checkpoint's channel values still trigger: `branch:to:<node>` channels and pending sends
 * (`__pregel_tasks`), de-duplicated. Non-empty means the thread stopped before finishing (an interrupt).
 */
export function pendingNodes(channels: Record<string, unknown>): string[] {
  const next: string[] = [];
  for (const [key, value] of Object.entries(channels)) {
    if (key.startsWith("branch:to:")) next.push(key.slice("branch:to:".length));
    else if (key === "__pregel_tasks" && Array.isArray(value)) {
      // Sends (e.g. one per tool call) wait here until their node runs.
      for (const task of value) if (task && typeof (task as { node?: unknown }).node === "string") next.push((task as { node: string }).node);
    }
  }
  return [...new Set(next)];
}

/**
 * Converts a checkpoint tuple to the wire state. `values` are the channel values without LangGraph internals
 * (`branch:*`, `__*`), messages flattened; `next` are the nodes the checkpoint still triggers (`branch:to:<node>`
 * channels and pending sends); interrupts come from pending `__interrupt__` writes.
 */
export function checkpointToState(threadId: string, tuple: CheckpointTuple | undefined): ThreadStateResponse {
  if (!tuple) {
    return { values: {}, next: [], tasks: [], metadata: {}, created_at: null, checkpoint: null, parent_checkpoint: null, checkpoint_id: null, parent_checkpoint_id: null, interrupts: [] };
  }
  const channels = tuple.checkpoint.channel_values ?? {};
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(channels)) {
    if (!key.startsWith("branch:") && !key.startsWith("__") && !key.includes(":")) values[key] = value;
  }
  const next = pendingNodes(channels);
  const interrupts = (tuple.pendingWrites ?? []).filter(([, channel]) => channel === "__interrupt__").flatMap(([, , value]) => (Array.isArray(value) ? value : [value]));
  const id = tuple.checkpoint.id;
  const parentId = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
  return {
    values: serializeValues(values) as Record<string, unknown>,
    next,
    tasks: [],
    metadata: (tuple.metadata ?? {}) as Record<string, unknown>,
    created_at: tuple.checkpoint.ts ?? null,
    checkpoint: ref(threadId, id),
    parent_checkpoint: ref(threadId, parentId),
    checkpoint_id: id ?? null,
    parent_checkpoint_id: parentId ?? null,
    interrupts: serializeValues(interrupts) as unknown[],
  };
}

/**
 * The state of a thread at one checkpoint (time travel).
 * @throws NotFoundError "Checkpoint <id> not found" when the thread has no such checkpoint.
 */
export async function readThreadStateAt(checkpointer: BaseCheckpointSaver, threadId: string, checkpointId: string): Promise<ThreadStateResponse> {
  const tuple = await checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId } });
  if (!tuple) throw new NotFoundError(`Checkpoint ${checkpointId} not found`);
  return checkpointToState(threadId, tuple);
}

/** The newest state of a thread (root namespace), or the empty state when it has no checkpoint yet. */
export async function readThreadState(checkpointer: BaseCheckpointSaver, threadId: string): Promise<ThreadStateResponse> {
  const tuple = await checkpointer.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  return checkpointToState(threadId, tuple);
}
