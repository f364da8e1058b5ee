// DeerFlow's `subagent.*` run events (deerflow/subagents/step_events.py subagent_run_event): the task tool's live
// `task_*` custom chunks mapped to the stored catalog events the web app reads after a reload
// (`GET .../runs/{id}/events?event_types=subagent.step&task_id=...`, frontend core/tasks/steps.ts).

/** Upstream SUBAGENT_STEP_MAX_CHARS: longest step text, tool-call args JSON, result or error kept, in characters. */
export const SUBAGENT_STEP_MAX_CHARS = 8192;

/** A catalog event to store: type, category `subagent`, content and metadata (`task_id`, `message_index`). */
export interface CatalogEvent {
  event_type: "subagent.start" | "subagent.step" | "subagent.end";
  category: "subagent";
  content: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

const TERMINAL: Record<string, string> = { task_completed: "completed", task_failed: "failed", task_cancelled: "cancelled", task_timed_out: "timed_out" };

const clip = (text: string): [string, boolean] => (text.length > SUBAGENT_STEP_MAX_CHARS ? [text.slice(0, SUBAGENT_STEP_MAX_CHARS), true] : [text, false]);

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => (typeof b === "string" ? b : typeof (b as { text?: unknown })?.text === "string" ? (b as { text: string }).text : "")).filter(Boolean).join("\n");
}

/** A tool call's name and args; args whose JSON is over the cap become the clipped JSON with `args_truncated`. */
function boundedCall(call: { name?: unknown; args?: unknown }): Record<string, unknown> {
  const json = typeof call.args === "string" ? call.args : JSON.stringify(call.args ?? null);
  return json.length > SUBAGENT_STEP_MAX_CHARS ? { name: call.name, args: json.slice(0, SUBAGENT_STEP_MAX_CHARS), args_truncated: true } : { name: call.name, args: call.args };
}

/**
 * The step content of one child message (upstream build_subagent_step): `{task_id, message_index, kind, text,
 * truncated}` plus `tool_name` for a tool result or `tool_calls` for an AI turn.
 */
export function subagentStep(message: Record<string, unknown>, taskId: string, messageIndex: number): Record<string, unknown> {
  const kind = message.type === "tool" ? "tool" : "ai";
  const [text, truncated] = clip(textOf(message.content ?? ""));
  const step: Record<string, unknown> = { task_id: taskId, message_index: messageIndex, kind, text, truncated };
  if (kind === "tool") step.tool_name = message.name;
  else step.tool_calls = (Array.isArray(message.tool_calls) ? (message.tool_calls as Record<string, unknown>[]) : []).map(boundedCall);
  return step;
}

/** The terminal content: status, model, usage, and the result or error clipped to the cap. */
function endContent(chunk: Record<string, unknown>, taskId: string, status: string): Record<string, unknown> {
  const content: Record<string, unknown> = { task_id: taskId, status };
  if (typeof chunk.model_name === "string" && chunk.model_name.trim()) content.model_name = chunk.model_name.trim();
  if (chunk.usage && typeof chunk.usage === "object") content.usage = chunk.usage;
  for (const key of ["result", "error"] as const) {
    if (chunk[key] === undefined || chunk[key] === null) continue;
    const [text, truncated] = clip(String(chunk[key]));
    content[key] = text;
    if (truncated) content[`${key}_truncated`] = true;
  }
  return content;
}

/**
 * Maps a `custom` stream chunk to its catalog event: `task_started` -> `subagent.start`, `task_running` ->
 * `subagent.step`, `task_completed|failed|cancelled|timed_out` -> `subagent.end`; null for anything else or a
 * malformed chunk (no task id, a negative or non-integer message index, no message).
 */
export function subagentRunEvent(chunk: unknown): CatalogEvent | null {
  if (!chunk || typeof chunk !== "object") return null;
  const c = chunk as Record<string, unknown>;
  const type = c.type;
  const taskId = c.task_id;
  if (typeof type !== "string" || !type.startsWith("task_") || typeof taskId !== "string" || !taskId) return null;
  if (type === "task_started") {
    if (c.description !== undefined && c.description !== null && typeof c.description !== "string") return null;
    return { event_type: "subagent.start", category: "subagent", content: { task_id: taskId, description: c.description ?? null }, metadata: { task_id: taskId } };
  }
  if (type === "task_running") {
    const index = c.message_index;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || !c.message || typeof c.message !== "object") return null;
    return { event_type: "subagent.step", category: "subagent", content: subagentStep(c.message as Record<string, unknown>, taskId, index), metadata: { task_id: taskId, message_index: index } };
  }
  const status = TERMINAL[type];
  return status ? { event_type: "subagent.end", category: "subagent", content: endContent(c, taskId, status), metadata: { task_id: taskId } } : null;
}
