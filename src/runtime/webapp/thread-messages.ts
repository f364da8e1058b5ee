// The thread message feed (DeerFlow app/gateway/routers/thread_runs.py `/messages/page`) and token usage
// (`/token-usage`), derived from the thread's checkpoints: the newest checkpoint holds the visible conversation
// (regenerate and edit-replay fork from an earlier checkpoint, so superseded turns are already gone), and the
// oldest checkpoint that contains a message names the run that produced it.
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph";
import { serializeMessage, type WireMessage } from "../wire/serialization.js";
import type { RunRecord } from "../persistence/repositories.js";

/** One row of the feed, as the web app's `RunMessage` type reads it. `seq` is 1-based and thread-global. */
export interface ThreadMessageRow {
  run_id: string;
  seq: number;
  event_type: string;
  category: "message";
  content: WireMessage;
  metadata: { caller: string; [key: string]: unknown };
  created_at: string;
  feedback: { feedback_id: string; rating: number; comment: string | null } | null;
}

/** The `/messages/page` answer: oldest-first rows of one page, and the cursor to the previous page. */
export interface ThreadMessagesPage {
  data: ThreadMessageRow[];
  has_more: boolean;
  next_before_seq: number | null;
}

type MessageLike = { id?: string; getType?: () => string; _getType?: () => string; additional_kwargs?: Record<string, unknown>; name?: string };

const messagesOf = (channelValues: Record<string, unknown> | undefined): MessageLike[] => {
  const messages = channelValues?.messages;
  return Array.isArray(messages) ? (messages as MessageLike[]) : [];
};

/** Upstream `_is_hidden_or_control_message`: summaries and `hide_from_ui` messages are not shown. */
export function isHiddenMessage(message: WireMessage): boolean {
  const kwargs = (message.additional_kwargs ?? {}) as Record<string, unknown>;
  return message.type === "remove" || message.name === "summary" || kwargs.hide_from_ui === true;
}

/**
 * Every visible message of the thread's newest checkpoint with its producing run and position.
 * Walks the newest checkpoint's lineage oldest-first (parent links, among the `maxCheckpoints` newest) to attribute each message id
 * to the run of the first checkpoint that contained it (`runs`: the thread's run records); messages older than
 * the walked window, or copied from another thread by a branch, keep an empty run id.
 * @returns rows ordered by `seq` (oldest first).
 */
export async function loadThreadMessageRows(checkpointer: BaseCheckpointSaver, threadId: string, runs: readonly RunRecord[], options: { maxCheckpoints?: number } = {}): Promise<ThreadMessageRow[]> {
  const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  const latest = await checkpointer.getTuple(config);
  if (!latest) return [];
  // Runs of a thread execute one after another, so the run of a checkpoint is the newest run admitted before it
  // was written (LangGraph JS does not copy the run's metadata into checkpoint metadata).
  const byStart = [...runs].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  const runAt = (ts: string): string => {
    const t = Date.parse(ts);
    let found = "";
    for (const r of byStart) if (Date.parse(r.created_at) <= t) found = r.run_id;
    return found;
  };
  // Only the newest checkpoint's lineage counts: a regenerate or edit forks from an earlier checkpoint, and the
  // abandoned branch (which may hold the same message ids) must not lend them its run.
  const byId = new Map<string, CheckpointTuple>();
  for await (const tuple of checkpointer.list(config, { limit: options.maxCheckpoints ?? 1_000 })) byId.set(tuple.checkpoint.id, tuple);
  const newestFirst: { runId: string; ts: string; ids: string[] }[] = [];
  for (let t: CheckpointTuple | undefined = byId.get(latest.checkpoint.id) ?? latest; t; ) {
    newestFirst.push({ runId: runAt(t.checkpoint.ts), ts: t.checkpoint.ts, ids: messagesOf(t.checkpoint.channel_values).flatMap((m) => (m.id ? [m.id] : [])) });
    const parentId = t.parentConfig?.configurable?.checkpoint_id as string | undefined;
    t = parentId ? byId.get(parentId) : undefined;
  }
  const origin = new Map<string, { runId: string; ts: string }>();
  for (const entry of newestFirst.reverse()) {
    for (const id of entry.ids) if (!origin.has(id)) origin.set(id, { runId: entry.runId, ts: entry.ts });
  }
  const rows: ThreadMessageRow[] = [];
  messagesOf(latest.checkpoint.channel_values).forEach((raw, index) => {
    const content = serializeMessage(raw as never);
    if (isHiddenMessage(content)) return;
    const from = (raw.id && origin.get(raw.id)) || { runId: "", ts: latest.checkpoint.ts };
    rows.push({
      run_id: from.runId,
      seq: index + 1,
      event_type: content.type === "ai" ? "llm.ai.response" : content.type === "tool" ? "tool.result" : `${content.type}_message`,
      category: "message",
      content,
      metadata: { caller: "lead_agent" },
      created_at: from.ts,
      feedback: null,
    });
  });
  return rows;
}

/**
 * One backward page: the `limit` newest rows before `beforeSeq` (all rows when absent), oldest first, with the
 * cursor of the next older page (`next_before_seq` = the first row's seq) when older rows remain.
 */
export function pageRows(rows: ThreadMessageRow[], limit: number, beforeSeq?: number): ThreadMessagesPage {
  const eligible = beforeSeq === undefined ? rows : rows.filter((r) => r.seq < beforeSeq);
  const data = eligible.slice(Math.max(0, eligible.length - limit));
  const hasMore = eligible.length > data.length;
  return { data, has_more: hasMore, next_before_seq: hasMore ? data[0].seq : null };
}

/**
 * One cursor page of rows (upstream `list_messages_by_run` + `trim_run_message_page`): rows after `afterSeq`
 * (forward: the oldest `limit`), else before `beforeSeq` (backward: the newest `limit`), else the newest `limit`;
 * oldest first, `has_more` when rows beyond the page remain in that direction.
 */
export function cursorPage(rows: ThreadMessageRow[], limit: number, cursor: { beforeSeq?: number; afterSeq?: number }): { data: ThreadMessageRow[]; has_more: boolean } {
  if (cursor.afterSeq !== undefined) {
    const after = rows.filter((r) => r.seq > cursor.afterSeq!);
    return { data: after.slice(0, limit), has_more: after.length > limit };
  }
  const { data, has_more } = pageRows(rows, limit, cursor.beforeSeq);
  return { data, has_more };
}

/** The `/token-usage` answer (upstream `ThreadTokenUsageResponse`). Token counts are model tokens. */
export interface ThreadTokenUsage {
  thread_id: string;
  total_tokens: number;
  total_input_tokens: number;
  total_output_tokens: number;
  total_runs: number;
  by_model: Record<string, { tokens: number; runs: number }>;
  by_caller: { lead_agent: number; subagent: number; middleware: number };
  context_usage: { token_count: number; max_context_tokens: number | null; percentage: number | null } | null;
}

/**
 * Sums the `usage_metadata` of the thread's AI messages (newest checkpoint). Subagent tokens that TokenUsageMiddleware folded into a lead
 * message (the `task` results marked `subagent_usage_attributed`) count as `subagent`; the rest as `lead_agent`. `by_model` groups by `response_metadata.model_name`, counting runs per model. `context_usage`
 * is the newest AI message's input tokens (what the model last saw).
 */
export function aggregateTokenUsage(threadId: string, rows: ThreadMessageRow[], runs: RunRecord[]): ThreadTokenUsage {
  const out: ThreadTokenUsage = {
    thread_id: threadId, total_tokens: 0, total_input_tokens: 0, total_output_tokens: 0, total_runs: runs.length,
    by_model: {}, by_caller: { lead_agent: 0, subagent: 0, middleware: 0 }, context_usage: null,
  };
  const runsByModel = new Map<string, Set<string>>();
  let lastInput: number | null = null;
  let subagent = 0;
  for (const row of rows) {
    const kwargs = (row.content.additional_kwargs ?? {}) as Record<string, unknown>;
    const folded = kwargs.subagent_usage_attributed === true ? (kwargs.subagent_usage as { total_tokens?: number; input_tokens?: number; output_tokens?: number } | undefined) : undefined;
    if (folded) subagent += folded.total_tokens ?? (folded.input_tokens ?? 0) + (folded.output_tokens ?? 0);
    const usage = row.content.usage_metadata as { input_tokens?: number; output_tokens?: number; total_tokens?: number } | undefined;
    if (row.content.type !== "ai" || !usage) continue;
    const input = usage.input_tokens ?? 0;
    const output = usage.output_tokens ?? 0;
    const total = usage.total_tokens ?? input + output;
    out.total_input_tokens += input;
    out.total_output_tokens += output;
    out.total_tokens += total;
    const model = String((row.content.response_metadata as Record<string, unknown> | undefined)?.model_name ?? "unknown");
    out.by_model[model] ??= { tokens: 0, runs: 0 };
    out.by_model[model].tokens += total;
    if (!runsByModel.has(model)) runsByModel.set(model, new Set());
    runsByModel.get(model)!.add(row.run_id);
    lastInput = input;
  }
  out.by_caller.subagent = Math.min(subagent, out.total_tokens);
  out.by_caller.lead_agent = out.total_tokens - out.by_caller.subagent;
  for (const [model, ids] of runsByModel) out.by_model[model].runs = ids.size;
  if (lastInput !== null) out.context_usage = { token_count: lastInput, max_context_tokens: null, percentage: null };
  return out;
}
