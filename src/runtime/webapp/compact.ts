// Manual context compaction (DeerFlow app/gateway/routers/threads.py `compact`, runtime compaction): summarize
// the older part of a thread now, with the same cut and rescue rules as SummarizationMiddleware, and write the
// result as a new checkpoint (`summary_text` + the kept messages) on top of the thread's newest one.
import type { BaseMessage } from "@langchain/core/messages";
import { copyCheckpoint, uuid6, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { countTokensApproximately } from "langchain";
import { SummarizationMiddleware, type ContextSize } from "../../agents/middlewares/summarization.js";
import { isRealUserMessage } from "../../agents/middlewares/title.js";
import type { AppConfig } from "../../config/schema.js";
import { DeerflowError, NotFoundError } from "../../errors.js";
import { createChatModel } from "../../models/create-chat-model.js";

/** The compact answer (upstream `ThreadCompactResponse`). Token counts are approximate model tokens. */
export interface CompactResult {
  thread_id: string;
  compacted: boolean;
  reason: string | null;
  removed_message_count: number;
  preserved_message_count: number;
  summary_updated: boolean;
  checkpoint_id: string | null;
  total_tokens: number;
}

/**
 * Summarizes everything before the `keep` window (default: the `summarization.keep` setting) into `summary_text`.
 * The model is `modelName`, else `summarization.model_name`, else the default model.
 * @returns `compacted: false` with a reason when there is nothing to summarize.
 * @throws NotFoundError (404) when the thread has no state; DeerflowError `conflict` (409) when the model gives
 *   no summary (the history is left unchanged); whatever creating the model throws.
 */
export async function compactThread(checkpointer: BaseCheckpointSaver, threadId: string, appConfig: AppConfig, options: { keep?: ContextSize | null; modelName?: string | null } = {}): Promise<CompactResult> {
  const root = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  const latest = await checkpointer.getTuple(root);
  if (!latest) throw new NotFoundError(`Thread ${threadId} not found`);
  const history = (latest.checkpoint.channel_values.messages ?? []) as BaseMessage[];
  const previous = (latest.checkpoint.channel_values.summary_text as string | null | undefined) || null;
  const base: CompactResult = { thread_id: threadId, compacted: false, reason: null, removed_message_count: 0, preserved_message_count: history.length, summary_updated: false, checkpoint_id: latest.checkpoint.id, total_tokens: countTokensApproximately(history) };
  const model = await createChatModel(options.modelName ?? appConfig.summarization.model_name ?? null, { appConfig, thinkingEnabled: false });
  const summarizer = new SummarizationMiddleware({ model, keep: options.keep ?? appConfig.summarization.keep, trimTokensToSummarize: appConfig.summarization.trim_tokens_to_summarize });
  const cut = summarizer.cutoff(history);
  if (cut === 0) return { ...base, reason: "nothing_to_compact" };
  const head = history.slice(0, cut);
  const latestUser = [...history].reverse().find(isRealUserMessage);
  const rescued = head.filter((m) => m === latestUser || m.additional_kwargs?.dynamic_context_reminder);
  const summarized = head.filter((m) => !rescued.includes(m));
  if (!summarized.length) return { ...base, reason: "nothing_to_compact" };
  const summary = await summarizer.summarize(previous, summarized);
  if (!summary) throw new DeerflowError("conflict", "The model gave no summary; the thread was left unchanged");
  const kept = [...rescued, ...history.slice(cut)];
  const next = copyCheckpoint(latest.checkpoint);
  next.id = uuid6(-1);
  next.ts = new Date().toISOString();
  next.channel_values.messages = kept;
  next.channel_values.summary_text = summary;
  const versions: Record<string, string | number> = {};
  for (const channel of ["messages", "summary_text"]) {
    versions[channel] = checkpointer.getNextVersion(next.channel_versions[channel] as never) as string | number;
    next.channel_versions[channel] = versions[channel];
  }
  const step = Number((latest.metadata as { step?: number } | undefined)?.step ?? 0) + 1;
  await checkpointer.put({ configurable: { ...root.configurable, checkpoint_id: latest.checkpoint.id } }, next, { source: "update", step, parents: {}, writes: { manual_compaction: null } } as never, versions);
  return {
    thread_id: threadId, compacted: true, reason: null, removed_message_count: summarized.length, preserved_message_count: kept.length,
    summary_updated: true, checkpoint_id: next.id, total_tokens: countTokensApproximately(kept),
  };
}
