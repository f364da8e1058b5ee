// Port of DeerFlow runtime/runs/worker.py `_ensure_interrupted_title`: a first turn stopped by the user still names
// its thread (the title middleware only runs after a model answer, which an interrupted turn may never get).
import { BaseMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { userTypedText } from "../../agents/middlewares/message-utils.js";
import { fallbackTitle, isRealUserMessage, TitleConfigSchema } from "../../agents/middlewares/title.js";
import type { AppConfig } from "../../config/schema.js";
import { latestCheckpoint } from "../threads/rollback.js";

/** The graph whose state gets the title (the run's compiled agent, or its `graph`). */
interface TitleWritableGraph {
  updateState(config: { configurable: Record<string, unknown> }, values: Record<string, unknown>): Promise<unknown>;
}

const messagesOf = (value: unknown): BaseMessage[] => {
  const list = (value as { messages?: unknown } | null | undefined)?.messages;
  return Array.isArray(list) ? list.filter((m): m is BaseMessage => BaseMessage.isInstance(m)) : [];
};

/**
 * Gives the thread of an interrupted run a title when it has none: the local fallback title (the first real user
 * message, shortened as TitleMiddleware does; no model call) from the checkpointed messages, or from the run's input
 * when nothing was checkpointed yet. Nothing is written when `title.enabled` is false, a title exists, or there is
 * no user text. Idempotent.
 * @param agent the run's agent (its checkpointer set); the title goes in through `updateState`, so reducers and
 *   channel versions are handled by LangGraph.
 * @returns the thread's title afterwards, or null when none was written or found.
 */
export async function ensureInterruptedTitle(agent: unknown, checkpointer: BaseCheckpointSaver, threadId: string, appConfig: Pick<AppConfig, "title">, input: unknown): Promise<string | null> {
  const config = TitleConfigSchema.parse(appConfig.title ?? {});
  if (!config.enabled) return null;
  const tuple = await latestCheckpoint(checkpointer, threadId);
  const values = (tuple?.checkpoint.channel_values ?? {}) as Record<string, unknown>;
  if (typeof values.title === "string" && values.title) return values.title;
  const checkpointed = messagesOf(values);
  const user = (checkpointed.length ? checkpointed : messagesOf(input)).find(isRealUserMessage);
  const text = user ? userTypedText(user) : "";
  if (!text.trim()) return null;
  const title = fallbackTitle(text, config.max_chars);
  const graph = ((agent as { graph?: TitleWritableGraph }).graph ?? agent) as TitleWritableGraph;
  await graph.updateState({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, { title });
  return title;
}
