// Regenerate, edit-and-rerun and branch (DeerFlow app/gateway/routers/thread_runs.py `runs/regenerate/prepare`,
// `runs/edit-regenerate/prepare`; threads.py `branches`). Prepare answers the input, base checkpoint and metadata
// the web app then submits as an ordinary run from that checkpoint, so the replaced turn drops out of the newest
// state (and therefore out of the message feed). A branch is a new thread whose first checkpoint is a copy of the
// source thread's state at the end of the chosen turn.
import { randomUUID } from "node:crypto";
import { lstatSync } from "node:fs";
import { cp, stat } from "node:fs/promises";
import { copyCheckpoint, uuid6, type BaseCheckpointSaver, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { ConflictError, NotFoundError } from "../../errors.js";
import { serializeMessage, type WireMessage } from "../wire/serialization.js";
import type { RunRecord } from "../persistence/repositories.js";
import { loadThreadMessageRows } from "./thread-messages.js";

/** How far back the checkpoint history is searched (upstream REGENERATE_HISTORY_RAW_SCAN_LIMIT / branch limit). */
const HISTORY_SCAN_LIMIT = 400;
/** State channels that name the source thread's sandbox and directories: never copied into a branch. */
const BRANCH_EXCLUDED_CHANNELS = ["sandbox", "thread_data"];

/** A checkpoint reference as the run-create body takes it. */
export interface CheckpointRef {
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: null;
}

/** The regenerate prepare answer (upstream `RegeneratePrepareResponse`). */
export interface RegeneratePrepared {
  input: { messages: Record<string, unknown>[]; title?: string };
  checkpoint: CheckpointRef;
  metadata: Record<string, unknown>;
  target_run_id: string;
}

/** The edit-regenerate prepare answer (upstream `EditRegeneratePrepareResponse`). */
export interface EditRegeneratePrepared extends RegeneratePrepared {
  replacement_human_message_id: string;
  source_message_ids: string[];
}

const root = (threadId: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
const wireMessages = (tuple: CheckpointTuple): WireMessage[] => {
  const raw = tuple.checkpoint.channel_values?.messages;
  return Array.isArray(raw) ? raw.map((m) => serializeMessage(m as never)) : [];
};
const kwargsOf = (m: WireMessage) => (m.additional_kwargs ?? {}) as Record<string, unknown>;
const isHidden = (m: WireMessage) => m.type === "remove" || m.name === "summary" || kwargsOf(m).hide_from_ui === true;
const isVisibleHuman = (m: WireMessage) => m.type === "human" && !isHidden(m);
const isVisibleAi = (m: WireMessage) => m.type === "ai" && !isHidden(m);
const textOf = (m: WireMessage): string => {
  const c = m.content;
  if (typeof c === "string") return c;
  return Array.isArray(c) ? c.map((b) => (typeof b === "string" ? b : (b as { type?: string }).type === "text" ? String((b as { text?: unknown }).text ?? "") : "")).join("") : "";
};
const toolCallsOf = (m: WireMessage) => (Array.isArray(m.tool_calls) ? m.tool_calls : []);

/** The text the user typed (uploads and skill activation rewrite content; the original is kept in kwargs). */
const userText = (m: WireMessage) => {
  const original = kwargsOf(m).original_user_content;
  return typeof original === "string" ? original : textOf(m);
};

/** Checkpoints of the thread, newest first (bounded). */
async function history(checkpointer: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const tuple of checkpointer.list(root(threadId), { limit: HISTORY_SCAN_LIMIT })) out.push(tuple);
  return out;
}

/**
 * The checkpoint just before the one that first contained message `messageId` (chronologically).
 * @throws ConflictError when the message is not in the scanned history or has no earlier checkpoint.
 */
async function checkpointBefore(checkpointer: BaseCheckpointSaver, threadId: string, messageId: string): Promise<CheckpointTuple> {
  const newestFirst = await history(checkpointer, threadId);
  const contains = (t: CheckpointTuple) => wireMessages(t).some((m) => m.id === messageId);
  let firstWith = -1;
  for (let i = newestFirst.length - 1; i >= 0; i--) {
    if (contains(newestFirst[i])) {
      firstWith = i;
      break;
    }
  }
  if (firstWith === -1) throw new ConflictError(`Could not locate the user message in recent checkpoint history (limit=${HISTORY_SCAN_LIMIT})`);
  const base = newestFirst[firstWith + 1];
  if (!base) throw new ConflictError("The user message has no earlier checkpoint to replay from");
  return base;
}

const ref = (tuple: CheckpointTuple): CheckpointRef => ({ checkpoint_ns: "", checkpoint_id: tuple.checkpoint.id, checkpoint_map: null });

/** A user message replayed as new input: its text, its files, and (for regenerate) its id. */
function cleanHuman(source: WireMessage, text: string, id: string): Record<string, unknown> {
  const kwargs = { ...kwargsOf(source) };
  for (const key of ["original_user_content", "hide_from_ui", "dynamic_context_reminder", "run_id", "timestamp"]) delete kwargs[key];
  return { type: "human", id: id.replace(/__user$/, ""), content: [{ type: "text", text }], additional_kwargs: kwargs, ...(source.name ? { name: source.name } : {}) };
}

async function latestOrThrow(checkpointer: BaseCheckpointSaver, threadId: string): Promise<CheckpointTuple> {
  const latest = await checkpointer.getTuple(root(threadId));
  if (!latest) throw new NotFoundError(`Thread ${threadId} has no checkpoint`);
  return latest;
}

/** The run that produced message `messageId` (from the message feed's attribution). */
async function runOfMessage(checkpointer: BaseCheckpointSaver, threadId: string, runs: readonly RunRecord[], messageId: string): Promise<string> {
  const rows = await loadThreadMessageRows(checkpointer, threadId, runs);
  const runId = rows.find((r) => r.content.id === messageId)?.run_id;
  if (!runId) throw new ConflictError("Could not find source run for assistant message");
  return runId;
}

/**
 * Prepares regenerating the latest visible assistant message `messageId`: the previous user message is replayed
 * from the checkpoint before it. The current title is replayed too (the base may predate a rename).
 * @throws NotFoundError (404) for an unknown message; ConflictError (409) when it is not the latest visible
 *   assistant message or its turn cannot be located.
 */
export async function prepareRegenerate(checkpointer: BaseCheckpointSaver, threadId: string, runs: readonly RunRecord[], messageId: string): Promise<RegeneratePrepared> {
  const latest = await latestOrThrow(checkpointer, threadId);
  const messages = wireMessages(latest);
  const index = messages.findIndex((m) => m.id === messageId);
  if (index === -1) throw new NotFoundError(`Message ${messageId} not found`);
  if (!isVisibleAi(messages[index])) throw new ConflictError("Only visible assistant messages can be regenerated");
  if ([...messages].reverse().find(isVisibleAi)?.id !== messageId) throw new ConflictError("Only the latest assistant message can be regenerated");
  const human = messages.slice(0, index).reverse().find(isVisibleHuman);
  if (!human?.id) throw new ConflictError("Could not find the user message for this assistant response");
  const targetRunId = await runOfMessage(checkpointer, threadId, runs, messageId);
  const base = await checkpointBefore(checkpointer, threadId, human.id as string);
  const input: RegeneratePrepared["input"] = { messages: [cleanHuman(human, userText(human), human.id as string)] };
  const title = latest.checkpoint.channel_values?.title;
  if (typeof title === "string" && title) input.title = title;
  return {
    input,
    checkpoint: ref(base),
    metadata: { regenerate_from_message_id: messageId, regenerate_from_run_id: targetRunId, regenerate_checkpoint_id: base.checkpoint.id },
    target_run_id: targetRunId,
  };
}

/**
 * Prepares editing the latest completed user turn `humanMessageId` to `replacementText` and running it again
 * from the checkpoint before it, under a new message id.
 * @throws ConflictError (409) for an empty or unchanged text, a turn that is not the latest completed one, an
 *   active goal, or a source run that did not succeed.
 */
export async function prepareEditRegenerate(checkpointer: BaseCheckpointSaver, threadId: string, runs: readonly RunRecord[], humanMessageId: string, replacementText: string): Promise<EditRegeneratePrepared> {
  const text = replacementText.trim();
  if (!text) throw new ConflictError("Edited message cannot be empty");
  const latest = await latestOrThrow(checkpointer, threadId);
  const goal = latest.checkpoint.channel_values?.goal as { status?: string } | undefined;
  if (goal?.status === "active") throw new ConflictError("Cannot edit while a goal is active");
  const messages = wireMessages(latest);
  let humanIndex = -1;
  for (let i = messages.length - 1; i >= 0; i--) if (isVisibleHuman(messages[i])) { humanIndex = i; break; }
  if (humanIndex === -1 || messages[humanIndex].id !== humanMessageId) throw new ConflictError("Only the latest completed user turn can be edited");
  let lastAi = -1;
  for (let i = humanIndex + 1; i < messages.length; i++) if (isVisibleAi(messages[i])) lastAi = i;
  if (lastAi === -1 || !textOf(messages[lastAi]).trim() || toolCallsOf(messages[lastAi]).length) throw new ConflictError("Only completed assistant text turns can be edited");
  const human = messages[humanIndex];
  if (text === userText(human).trim()) throw new ConflictError("Edited message is unchanged");
  const sourceAiId = messages[lastAi].id as string;
  const targetRunId = await runOfMessage(checkpointer, threadId, runs, sourceAiId);
  const source = runs.find((r) => r.run_id === targetRunId);
  if (!source || source.status !== "success") throw new ConflictError("Only successful assistant runs can be edited and rerun");
  const base = await checkpointBefore(checkpointer, threadId, humanMessageId);
  const replacementId = randomUUID();
  const input: RegeneratePrepared["input"] = { messages: [cleanHuman(human, text, replacementId)] };
  const baseTitle = base.checkpoint.channel_values?.title;
  const title = latest.checkpoint.channel_values?.title;
  // An untitled base belongs to a thread not named yet: leave it to be titled from the edited prompt.
  if (typeof baseTitle === "string" && baseTitle && typeof title === "string" && title) input.title = title;
  return {
    input,
    checkpoint: ref(base),
    metadata: {
      replay_kind: "edit", regenerate_from_message_id: sourceAiId, regenerate_from_run_id: targetRunId, regenerate_checkpoint_id: base.checkpoint.id,
      edit_from_message_id: humanMessageId, edit_message_id: replacementId, edit_version_group_id: (source.metadata.edit_version_group_id as string | undefined) ?? humanMessageId,
    },
    target_run_id: targetRunId,
    replacement_human_message_id: replacementId,
    source_message_ids: messages.slice(humanIndex, lastAi + 1).flatMap((m) => (typeof m.id === "string" ? [m.id] : [])),
  };
}

/** Upstream `_matches_branch_target`: every target is an AI message and nothing visible follows the last one. */
function endsWithTurn(messages: WireMessage[], targets: Set<string>): boolean {
  const index = new Map(messages.flatMap((m, i) => (typeof m.id === "string" ? [[m.id, i] as const] : [])));
  if (![...targets].every((id) => index.has(id) && messages[index.get(id)!].type === "ai")) return false;
  const end = Math.max(...[...targets].map((id) => index.get(id)!));
  return !messages.slice(end + 1).some((m) => !isHidden(m) && (m.type === "human" || m.type === "ai"));
}

/** What {@link branchThread} created. */
export interface BranchResult {
  thread_id: string;
  parent_thread_id: string;
  parent_checkpoint_id: string;
  branched_from_message_id: string;
  /** `copied` (the source's user data was copied), `empty` (it had none) or `skipped_historical_turn`. */
  workspace_clone_mode: string;
  /**
   * Upstream's `history_seed_mode`: `seeded` when the branch starts with the turn's messages, `skipped_empty` when
   * there were none. This gateway's feed reads the checkpoints, so the branch's first checkpoint is the seed.
   */
  history_seed_mode: "seeded" | "skipped_empty";
  /** Metadata for the new thread record. */
  metadata: Record<string, unknown>;
}

/**
 * Writes the first checkpoint of a new thread `newThreadId`: the newest checkpoint of `sourceThreadId` where the
 * turn ending with the assistant messages `targetIds` is complete, minus the sandbox channels; the title becomes
 * `title` when given. When the turn is the latest one, the source's `user-data` directory (`sourceDir`) is copied
 * to `targetDir` (symlinks are not followed).
 * @throws ConflictError (409) when no such checkpoint is in the scanned history.
 */
export async function branchThread(
  checkpointer: BaseCheckpointSaver,
  sourceThreadId: string,
  newThreadId: string,
  messageId: string,
  targetIds: Set<string>,
  options: { title?: string | null; sourceDir: string; targetDir: string },
): Promise<BranchResult> {
  const newestFirst = await history(checkpointer, sourceThreadId);
  const snapshot = newestFirst.find((t) => endsWithTurn(wireMessages(t), targetIds));
  if (!snapshot) throw new ConflictError("This turn can no longer be branched from.");
  const latestTurn = newestFirst[0] && endsWithTurn(wireMessages(newestFirst[0]), targetIds);
  const now = new Date().toISOString();
  const metadata = { is_branch: true, branch_parent_thread_id: sourceThreadId, branch_parent_checkpoint_id: snapshot.checkpoint.id, branch_parent_message_id: messageId, branch_created_at: now };
  const copy = copyCheckpoint(snapshot.checkpoint);
  copy.id = uuid6(-1);
  copy.ts = now;
  for (const channel of BRANCH_EXCLUDED_CHANNELS) delete copy.channel_values[channel];
  if (options.title) copy.channel_values.title = options.title;
  await checkpointer.put(root(newThreadId), copy, { source: "update", step: 0, parents: {}, ...metadata } as never, copy.channel_versions);
  let mode = "skipped_historical_turn";
  if (latestTurn) {
    const exists = await stat(options.sourceDir).then((s) => s.isDirectory()).catch(() => false);
    mode = "empty";
    if (exists) {
      // Symlinks are left out: a link copied into another thread could point anywhere.
      await cp(options.sourceDir, options.targetDir, { recursive: true, filter: (src) => !lstatSync(src).isSymbolicLink() && !/\/\.(upload|write)-[^/]*\.part$/.test(src) });
      mode = "copied";
    }
  }
  return { thread_id: newThreadId, parent_thread_id: sourceThreadId, parent_checkpoint_id: snapshot.checkpoint.id, branched_from_message_id: messageId, workspace_clone_mode: mode,
    history_seed_mode: Array.isArray(copy.channel_values.messages) && copy.channel_values.messages.length ? "seeded" : "skipped_empty", metadata };
}
