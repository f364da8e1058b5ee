// DeerFlow's per-run counters (runtime/journal.py RunJournal, persisted on the run row): token totals split by
// caller, model calls, messages added and why the run stopped early. Part of the Run JSON once the run has finished.

/** The counters of a run, all zero (and `stop_reason` null) until the run has finished. */
export interface RunCounters {
  /** Input tokens of every model call of the run (lead agent, subagents, middlewares). */
  total_input_tokens: number;
  total_output_tokens: number;
  total_tokens: number;
  /** Model calls that reported an answer. */
  llm_call_count: number;
  /** Tokens by caller: calls tagged `subagent:<type>`, `middleware:<name>`, and everything else (the lead agent). */
  lead_agent_tokens: number;
  subagent_tokens: number;
  middleware_tokens: number;
  /** Messages the run added to the thread (its input included). */
  message_count: number;
  /** Why a guard middleware ended the run (`loop_capped`, `token_capped`, ...), else null. */
  stop_reason: string | null;
}

/** The names of {@link RunCounters}, in the order the Run JSON lists them. */
export const RUN_COUNTER_KEYS = [
  "total_input_tokens",
  "total_output_tokens",
  "total_tokens",
  "llm_call_count",
  "lead_agent_tokens",
  "subagent_tokens",
  "middleware_tokens",
  "message_count",
  "stop_reason",
] as const satisfies readonly (keyof RunCounters)[];

/** Fresh counters: zeros and no stop reason. */
export function emptyRunCounters(): RunCounters {
  return { total_input_tokens: 0, total_output_tokens: 0, total_tokens: 0, llm_call_count: 0, lead_agent_tokens: 0, subagent_tokens: 0, middleware_tokens: 0, message_count: 0, stop_reason: null };
}

/**
 * The counters of a run record, or of what a store kept for it (an object or its JSON text, possibly from an older
 * row without some keys): known keys of the right type are taken, the rest default. Never throws.
 */
export function runCountersOf(stored: unknown): RunCounters {
  const out = emptyRunCounters();
  let value = stored;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return out;
    }
  }
  if (!value || typeof value !== "object") return out;
  for (const key of RUN_COUNTER_KEYS) {
    const v = (value as Record<string, unknown>)[key];
    if (key === "stop_reason") out.stop_reason = typeof v === "string" ? v : null;
    else if (typeof v === "number" && Number.isFinite(v)) out[key] = v;
  }
  return out;
}

const kwargsText = new WeakMap<object, string>();

/**
 * `record.kwargs` as JSON, serialised once per run: a run's kwargs (its input and config) are fixed at admission,
 * and every status save of the run binds them again (three saves per run; a long pasted input is then serialised
 * once, not three times). The text is kept only while the run is `pending` or `running`: a finished run's record
 * stays in memory for a minute, and it should not carry its input twice.
 */
export function kwargsJson(record: { kwargs: object; status: string }): string {
  const live = record.status === "pending" || record.status === "running";
  let text = kwargsText.get(record.kwargs);
  if (text === undefined) {
    text = JSON.stringify(record.kwargs);
    if (live) kwargsText.set(record.kwargs, text);
  } else if (!live) kwargsText.delete(record.kwargs);
  return text;
}
