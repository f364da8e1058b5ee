// The offline scripted model's answers to the goal evaluator (src/runtime/goals/), so goal continuation can be
// driven deterministically without a real model.
import type { BaseMessage } from "@langchain/core/messages";

/** Marks the goal evaluator's system message; the scripted model answers with a verdict when it sees it. */
export const GOAL_EVALUATOR_MARKER = "[goal-evaluator]";

const textOf = (m: BaseMessage) => (typeof m.content === "string" ? m.content : m.content.map((b) => (typeof b === "string" ? b : String((b as { text?: unknown }).text ?? ""))).join(""));

/**
 * The scripted evaluator's JSON verdict, or null when `messages` are not a goal evaluation. The rule reads only the
 * conversation part of the prompt (after `Visible conversation evidence:`): `GOAL MET` there is satisfied,
 * `GOAL BLOCKED` is `needs_user_input`, anything else is `goal_not_met_yet` (the gateway may continue).
 */
export function scriptedGoalVerdict(messages: BaseMessage[]): string | null {
  const system = messages.find((m) => m.getType() === "system");
  if (!system || !textOf(system).includes(GOAL_EVALUATOR_MARKER)) return null;
  const prompt = textOf(messages.at(-1)!);
  const evidence = prompt.slice(prompt.indexOf("Visible conversation evidence:"));
  if (evidence.includes("GOAL MET")) return JSON.stringify({ satisfied: true, blocker: "none", reason: "The conversation marks the goal as met.", evidence_summary: "the met mark" });
  if (evidence.includes("GOAL BLOCKED")) return JSON.stringify({ satisfied: false, blocker: "needs_user_input", reason: "The conversation marks the goal as blocked.", evidence_summary: "" });
  return JSON.stringify({ satisfied: false, blocker: "goal_not_met_yet", reason: "The conversation has no met mark yet.", evidence_summary: "" });
}
