// The text a finished channel run leaves in the chat (upstream _extract_response_text): the last AI message's
// text, or the clarification question the agent asked, or a notice for a stopped or failed run.
import type { ActiveRun } from "../runtime/runs/run-manager.js";
import type { RunService } from "../runtime/runs/run-service.js";
import { presentedPaths } from "./files.js";

/** Text of a message's content (string, or the text parts of a content list). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p === "string" ? p : typeof p === "object" && p && (p as { type?: string }).type === "text" ? String((p as { text?: unknown }).text ?? "") : "")).join("");
}

/** How a channel run ended, as the chat needs it. */
export interface RunOutcome {
  /** What the chat should finally show. */
  text: string;
  /** True when the turn ended with an `ask_clarification` question: the user's next message answers it. */
  clarification: boolean;
  /** The output files the agent presented in this turn (virtual paths; see files.ts). */
  presented: string[];
}

/**
 * Waits for the run and returns what the chat should finally show. An interrupted run (`/stop`) keeps its partial
 * (streamed) answer with "(stopped)"; a failed run shows a short error (no stack, no host path).
 */
export async function finalAnswer(runService: RunService, run: ActiveRun, streamed: string): Promise<string> {
  return (await runOutcome(runService, run, streamed)).text;
}

/** {@link finalAnswer} with whether the turn asks a question and the files it presented (upstream's final result). */
export async function runOutcome(runService: RunService, run: ActiveRun, streamed: string): Promise<RunOutcome> {
  const result = await runService.result(run).catch(() => null);
  const none = { clarification: false, presented: [] };
  // A stopped run stored no answer: what was streamed so far stays, marked as stopped.
  if (run.record.status === "interrupted") return { ...none, text: `${lastAnswer(result) || streamed}\n\n(stopped)`.trim() };
  if (!result || "__error__" in result) return { ...none, text: "An internal error occurred. Please try again." };
  return { text: lastAnswer(result) || "(no answer)", clarification: endsWithClarification(result), presented: presentedPaths(result) };
}

/** True when the current turn's last message is an `ask_clarification` result (upstream `_has_current_turn_clarification`). */
function endsWithClarification(values: Record<string, unknown>): boolean {
  const messages = Array.isArray(values.messages) ? (values.messages as Record<string, unknown>[]) : [];
  const last = messages.at(-1);
  return last !== undefined && String(last.type ?? last.role ?? "") === "tool" && last.name === "ask_clarification" && last.status !== "error";
}

/** The last message of the final state that a user should read: an AI answer or an ask_clarification question. */
function lastAnswer(values: Record<string, unknown> | null): string {
  const messages = Array.isArray(values?.messages) ? (values.messages as Record<string, unknown>[]) : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    const type = String(m.type ?? m.role ?? "");
    if (type === "human" || type === "user") return "";
    if (type === "tool" && m.name === "ask_clarification") return textOf(m.content);
    if ((type === "ai" || type === "assistant") && textOf(m.content).trim()) return textOf(m.content);
  }
  return "";
}
