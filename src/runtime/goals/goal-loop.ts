// The goal loop's I/O (DeerFlow runtime/runs/worker.py _prepare_goal_continuation_input): after a turn of a run on
// a thread with an active goal, ask the evaluator model whether the goal is met, record the verdict and counters on
// the goal, and hand the worker the hidden message of the next turn while the goal may continue.
import type { BaseMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import type { Logger } from "pino";
import type { AppConfig } from "../../config/schema.js";
import { latestCheckpoint } from "../threads/rollback.js";
import { readThreadState } from "../threads/thread-state-reader.js";
import { runOneshot } from "../webapp/oneshot.js";
import {
  activeGoal, continuationMessage, evaluatorPrompt, evidenceSignature, formatConversation, GOAL_EVALUATOR_SYSTEM, hasAssistantEvidence,
  noProgressCount, parseEvaluation, standDownReason, withEvaluation, type GoalEvaluation, type GoalState,
} from "./goal-state.js";

/** What the loop needs from the run: its thread, graph, model and a way to publish the new state. */
export interface GoalTurnDeps {
  threadId: string;
  runId: string;
  /** The run's checkpointer: `settle()` waits for the writes the run started, so reads see its last turn. */
  checkpointer: BaseCheckpointSaver & { settle(): Promise<void>; latestRoot?: { channel_values?: Record<string, unknown> } };
  /** The run's graph: the goal is written with its `updateState`. */
  graph: { updateState(config: Record<string, unknown>, values: Record<string, unknown>, asNode?: string): Promise<unknown> };
  appConfig: AppConfig;
  /** The evaluator's model: the run's model; null is the first configured one. */
  modelName: string | null;
  signal: AbortSignal;
  /** Publishes the thread's values after a goal write (the app's goal badge reads them). */
  publishValues: (values: unknown) => void;
  log: Logger;
}

const sameGoal = (a: GoalState | null, b: GoalState | null) => !!a && !!b && a.objective === b.objective && a.created_at === b.created_at;

/** The thread's messages and active goal in its newest checkpoint. */
async function readGoalAndMessages(deps: GoalTurnDeps): Promise<{ goal: GoalState | null; messages: BaseMessage[]; checkpointId: string | undefined }> {
  await deps.checkpointer.settle();
  const tuple = await latestCheckpoint(deps.checkpointer, deps.threadId);
  const values = (tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>;
  return { goal: activeGoal(values.goal), messages: Array.isArray(values.messages) ? (values.messages as BaseMessage[]) : [], checkpointId: tuple?.checkpoint.id };
}

/** Writes `goal` as the thread's goal and publishes the new values. */
async function writeGoal(deps: GoalTurnDeps, goal: Record<string, unknown>): Promise<void> {
  // No `as_node`: the lead graph has no goal node, so LangGraph credits the last writer and `next` stays empty
  // (as thread-service.ts's updates after a finished run).
  await deps.graph.updateState({ configurable: { thread_id: deps.threadId, checkpoint_ns: "" } }, { goal });
  await deps.checkpointer.settle();
  deps.publishValues((await readThreadState(deps.checkpointer, deps.threadId)).values);
}

/** The evaluator's verdict on the visible conversation; `missing_evidence` without a model call when there is no reply. */
async function evaluate(deps: GoalTurnDeps, goal: GoalState, messages: BaseMessage[]): Promise<GoalEvaluation> {
  if (!hasAssistantEvidence(messages)) return { satisfied: false, blocker: "missing_evidence", reason: "No visible assistant evidence is available yet.", evidence_summary: "" };
  const answer = await runOneshot(deps.appConfig, deps.modelName, GOAL_EVALUATOR_SYSTEM, evaluatorPrompt(goal, formatConversation(messages)), deps.signal);
  return parseEvaluation(answer);
}

/**
 * Judges the thread's active goal after a turn. Satisfied: the goal is cleared. Unmet and allowed to continue
 * (blocker `goal_not_met_yet`, under `max_continuations`, under `max_no_progress_continuations` repeats of the
 * same evidence): `continuation_count` goes up and the hidden continuation input is returned. Otherwise the verdict
 * is recorded with its `stand_down_reason`. A goal changed or cleared while the evaluator ran wins (nothing is
 * written). Never throws: an evaluator or store failure is logged and ends the loop.
 * @returns the next turn's graph input, or null to stop.
 */
export async function nextGoalTurn(deps: GoalTurnDeps): Promise<{ messages: BaseMessage[] } | null> {
  // The run's own newest checkpoint answers "no goal" without a store read: runs without a goal pay nothing.
  if (!activeGoal(deps.checkpointer.latestRoot?.channel_values?.goal)) return null;
  try {
    const before = await readGoalAndMessages(deps);
    const goal = before.goal;
    if (!goal || deps.signal.aborted) return null;
    const evaluation = await evaluate(deps, goal, before.messages);
    const after = await readGoalAndMessages(deps);
    if (deps.signal.aborted || !sameGoal(goal, after.goal) || after.checkpointId !== before.checkpointId) return null;
    if (evaluation.satisfied) {
      await writeGoal(deps, { ...withEvaluation(goal, evaluation, { runId: deps.runId, signature: "", noProgress: 0 }), status: "cleared" });
      return null;
    }
    const signature = evidenceSignature(before.messages);
    const noProgress = noProgressCount(goal, evaluation, signature);
    const standDown = standDownReason(goal, evaluation, noProgress);
    const next = withEvaluation(goal, evaluation, { runId: deps.runId, signature, noProgress, standDown, continuationCount: standDown ? undefined : goal.continuation_count + 1 });
    await writeGoal(deps, next as unknown as Record<string, unknown>);
    if (standDown) return null;
    deps.log.info({ continuation: next.continuation_count, max: next.max_continuations }, "continuing the thread for its active goal");
    return { messages: [continuationMessage(next, evaluation)] };
  } catch (err) {
    deps.log.warn({ err: (err as Error).message }, "goal evaluation failed");
    return null;
  }
}
