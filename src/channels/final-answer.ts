// The text a finished channel run leaves in the chat (upstream _extract_response_text): the last AI message's
// text, or the clarification question the agent asked, or a notice for a stopped or failed run.
import type { ActiveRun } from "../runtime/runs/run-manager.js";
import type { RunService } from "../runtime/runs/run-service.js";

/** Text of a message's content (string, or the text parts of a content list). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p === "string" ? p : typeof p === "object" && p && (p as { type?: string }).type === "text" ? String((p as { text?: unknown }).text ?? "") : "")).join("");
}

/**
 * Waits for the run and returns what the chat should finally show. An interrupted run (`/stop`) keeps its partial
 * (streamed) answer with "(stopped)"; a failed run shows a short error (no stack, no host path).
 */
export async function finalAnswer(runService: RunService, run: ActiveRun, streamed: string): Promise<string> {
  const result = await runService.result(run).catch(() => null);
  // A stopped run stored no answer: what was streamed so far stays, marked as stopped.
  if (run.record.status === "interrupted") return `${lastAnswer(result) || streamed}\n\n(stopped)`.trim();
  if (!result || "__error__" in result) return "An internal error occurred. Please try again.";
  return lastAnswer(result) || "(no answer)";
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
