// The thread goal's pure rules (DeerFlow deerflow/runtime/goal.py): building a goal, parsing the evaluator's
// verdict, the no-progress breaker, when to continue, and the hidden continuation message. No I/O here: the loop
// that reads the thread, calls the evaluator and writes the goal is goal-loop.ts.
import { createHash } from "node:crypto";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { GOAL_EVALUATOR_MARKER } from "../../models/scripted-goal-verdict.js";
import { answerText, cleanModelText } from "../webapp/oneshot.js";

/** Upstream DEFAULT_MAX_GOAL_CONTINUATIONS: the default, and the most a request may ask for (more is a 422). */
export const MAX_GOAL_CONTINUATIONS = 8;
/** Upstream DEFAULT_MAX_NO_PROGRESS_CONTINUATIONS. */
export const MAX_NO_PROGRESS_CONTINUATIONS = 2;
const MAX_REASON_CHARS = 1000;
const MAX_CONVERSATION_CHARS = 12_000;
const MAX_CONVERSATION_MESSAGES = 30;

/** Upstream GoalBlocker: why an unmet goal is not met. Only `goal_not_met_yet` lets the gateway continue. */
export type GoalBlocker = "none" | "missing_evidence" | "needs_user_input" | "run_failed" | "external_wait" | "goal_not_met_yet";
const BLOCKERS = new Set<GoalBlocker>(["none", "missing_evidence", "needs_user_input", "run_failed", "external_wait", "goal_not_met_yet"]);

/** The evaluator's verdict (upstream GoalEvaluation). */
export interface GoalEvaluation {
  satisfied: boolean;
  blocker: GoalBlocker;
  reason: string;
  evidence_summary: string;
}

/**
 * The goal as stored in the thread's `goal` channel and read by the app (upstream GoalState): counters are whole
 * numbers, times ISO strings. `last_evaluation` is the latest verdict with the run it judged, `progress_key` and
 * (when the gateway stopped continuing) `stand_down_reason`.
 */
export interface GoalState {
  objective: string;
  status: "active";
  created_at: string;
  updated_at: string;
  continuation_count: number;
  max_continuations: number;
  no_progress_count: number;
  max_no_progress_continuations: number;
  last_evaluation?: Record<string, unknown>;
}

/** A fresh active goal (upstream build_goal_state): whitespace collapsed, `maxContinuations` capped at 8. */
export function buildGoal(objective: string, maxContinuations = MAX_GOAL_CONTINUATIONS, now = new Date().toISOString()): GoalState {
  return {
    objective: objective.trim().split(/\s+/).join(" "), status: "active", created_at: now, updated_at: now,
    continuation_count: 0, max_continuations: Math.max(0, Math.min(Math.trunc(maxContinuations), MAX_GOAL_CONTINUATIONS)),
    no_progress_count: 0, max_no_progress_continuations: MAX_NO_PROGRESS_CONTINUATIONS,
  };
}

/** An active goal object read from thread state, else null (none, cleared, or not a goal). */
export function activeGoal(value: unknown): GoalState | null {
  if (!value || typeof value !== "object") return null;
  const goal = value as Partial<GoalState>;
  return goal.status === "active" && typeof goal.objective === "string" ? (goal as GoalState) : null;
}

const squash = (value: unknown, max: number) => (typeof value === "string" ? value.trim().split(/\s+/).join(" ").slice(0, max) : "");

/**
 * Parses the evaluator's answer (upstream parse_goal_evaluation_response): the first `{` to the last `}` as JSON
 * with a boolean `satisfied`; an unknown blocker of an unmet goal becomes `missing_evidence`, a met goal's `none`.
 * @throws Error when there is no such JSON object.
 */
export function parseEvaluation(text: string): GoalEvaluation {
  const candidate = cleanModelText(text);
  const start = candidate.indexOf("{");
  const end = candidate.lastIndexOf("}");
  if (start === -1 || end <= start) throw new Error("Goal evaluator response did not contain a JSON object.");
  const payload = JSON.parse(candidate.slice(start, end + 1)) as Record<string, unknown>;
  if (!payload || typeof payload !== "object" || typeof payload.satisfied !== "boolean") throw new Error("Goal evaluator JSON must include boolean 'satisfied'.");
  const blocker = payload.satisfied ? "none" : BLOCKERS.has(payload.blocker as GoalBlocker) && payload.blocker !== "none" ? (payload.blocker as GoalBlocker) : "missing_evidence";
  return { satisfied: payload.satisfied, blocker, reason: squash(payload.reason, MAX_REASON_CHARS), evidence_summary: squash(payload.evidence_summary, MAX_REASON_CHARS) };
}

/** Human and AI messages the app shows (upstream _is_visible_message: not `hide_from_ui`). */
function visible(messages: BaseMessage[]): BaseMessage[] {
  return messages.filter((m) => (m.getType() === "human" || m.getType() === "ai") && m.additional_kwargs?.hide_from_ui !== true);
}

/** The visible conversation as `User: ...` / `Assistant: ...` paragraphs, the last 30 messages and 12,000 characters. */
export function formatConversation(messages: BaseMessage[]): string {
  const lines = visible(messages).slice(-MAX_CONVERSATION_MESSAGES)
    .map((m) => [m.getType(), answerText(m).trim()] as const)
    .filter(([, text]) => text)
    .map(([type, text]) => `${type === "human" ? "User" : "Assistant"}: ${text}`);
  return lines.join("\n\n").slice(-MAX_CONVERSATION_CHARS);
}

/** Whether any visible AI message has text: without one the goal is `missing_evidence` with no model call. */
export const hasAssistantEvidence = (messages: BaseMessage[]) => visible(messages).some((m) => m.getType() === "ai" && answerText(m).trim() !== "");

/** SHA-256 of the newest visible AI text (upstream latest_visible_assistant_signature); "" when none. */
export function evidenceSignature(messages: BaseMessage[]): string {
  const last = visible(messages).reverse().find((m) => m.getType() === "ai" && answerText(m).trim());
  return last ? createHash("sha256").update(answerText(last).trim()).digest("hex") : "";
}

/** Upstream compute_goal_progress_key: the verdict's kind plus the evidence signature, as stable JSON. */
export const progressKey = (e: GoalEvaluation, signature: string) => JSON.stringify({ blocker: e.blocker, evidence_signature: signature, satisfied: e.satisfied });

/** Upstream compute_no_progress_count: one more than before when the progress key repeats, else 0. */
export function noProgressCount(goal: GoalState, e: GoalEvaluation, signature: string): number {
  if (e.satisfied) return 0;
  return goal.last_evaluation?.progress_key === progressKey(e, signature) ? goal.no_progress_count + 1 : 0;
}

/**
 * Why the gateway stops continuing an unmet goal (upstream _stand_down_reason): `blocked:<blocker>`,
 * `max_continuations_reached` or `no_progress_detected`; null when it may continue (or the goal is met).
 */
export function standDownReason(goal: GoalState, e: GoalEvaluation, noProgress: number): string | null {
  if (e.satisfied) return null;
  if (e.blocker !== "goal_not_met_yet") return `blocked:${e.blocker}`;
  if (goal.continuation_count >= goal.max_continuations) return "max_continuations_reached";
  if (noProgress >= goal.max_no_progress_continuations) return "no_progress_detected";
  return null;
}

/** A copy of `goal` with the verdict attached (upstream attach_goal_evaluation). */
export function withEvaluation(goal: GoalState, e: GoalEvaluation, fields: { runId: string; signature: string; noProgress: number; continuationCount?: number; standDown?: string | null }): GoalState {
  const now = new Date().toISOString();
  return {
    ...goal, updated_at: now, no_progress_count: fields.noProgress, continuation_count: fields.continuationCount ?? goal.continuation_count,
    last_evaluation: {
      satisfied: e.satisfied, blocker: e.blocker, reason: e.reason, evidence_summary: e.evidence_summary, run_id: fields.runId, evaluated_at: now,
      progress_key: progressKey(e, fields.signature), ...(fields.standDown ? { stand_down_reason: fields.standDown } : {}),
    },
  };
}

/** The hidden user message of a continuation turn (upstream make_goal_continuation_message's fields and flags). */
export function continuationMessage(goal: GoalState, e: GoalEvaluation): HumanMessage {
  const content = [
    "<goal_continuation>",
    `Active goal: ${goal.objective}`,
    `Evaluator result: not satisfied. Blocker: ${e.blocker}. Reason: ${e.reason || "none given"}`,
    `Visible evidence: ${e.evidence_summary || "none given"}`,
    "Keep working on the active goal with the tools and the conversation so far; only ask the user when you truly cannot go on.",
    "</goal_continuation>",
  ].join("\n");
  return new HumanMessage({ content, additional_kwargs: { hide_from_ui: true, deerflow_goal_continuation: true } });
}


/** The evaluator's system instruction: judge only what the visible conversation shows, answer one JSON object. */
export const GOAL_EVALUATOR_SYSTEM = [
  `${GOAL_EVALUATOR_MARKER} You judge whether an assistant has fully met a goal.`,
  "Base the verdict only on the visible conversation below; claims of changed files, passing tests or outside state count only when the conversation shows them.",
  "When the evidence is too thin to show progress, answer not satisfied with blocker missing_evidence.",
  "Blockers: needs_user_input (waiting on the user), run_failed (the turn failed), external_wait (waiting on an outside system), goal_not_met_yet (more autonomous work can help), none (only when satisfied).",
  'Answer with a single JSON object: {"satisfied": boolean, "blocker": string, "reason": string, "evidence_summary": string}.',
].join("\n");

/** The evaluator's user message: the goal and the visible conversation. */
export const evaluatorPrompt = (goal: GoalState, conversation: string) =>
  `Active goal:\n${goal.objective}\n\nVisible conversation evidence:\n${conversation}\n\nIs the active goal fully satisfied?`;
