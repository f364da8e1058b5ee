// What a run that ended early leaves in its thread. Port of DeerFlow runtime/runs/worker.py
// `_ensure_interrupted_title`: a first turn stopped by the user still names its thread (the title middleware only
// runs after a model answer, which an interrupted turn may never get). Beyond upstream: the answer streamed so far
// is kept as an AI message (docs/durable-runs.md), so a cancel, a shutdown or an error loses no text the user saw.
import { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { userTypedText } from "../../agents/middlewares/message-utils.js";
import { fallbackTitle, isRealUserMessage, TitleConfigSchema } from "../../agents/middlewares/title.js";
import type { AppConfig } from "../../config/schema.js";
import { latestCheckpoint } from "../threads/rollback.js";

/** The graph whose state gets the title (the run's compiled agent, or its `graph`). */
interface TitleWritableGraph {
  updateState(config: { configurable: Record<string, unknown> }, values: Record<string, unknown>, asNode?: string): Promise<unknown>;
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

/**
 * The AI message a run is streaming, from its top-level `messages` frames: the id, the node that streams it and the
 * text so far. A frame of another message starts over (the previous one was finished, and checkpointed, by then).
 */
export class PartialAnswer {
  private id: string | undefined;
  private node: string | undefined;
  private text = "";

  /** Takes the data of one top-level `messages` frame (`[message, metadata]`, wire form); ignores anything else. */
  add(data: unknown): void {
    if (!Array.isArray(data)) return;
    const [message, meta] = data as [Record<string, unknown> | null, Record<string, unknown> | null];
    if (!message || (message.type !== "AIMessageChunk" && message.type !== "ai") || typeof message.id !== "string") return;
    if (message.id !== this.id) {
      this.id = message.id;
      this.text = "";
      this.node = typeof meta?.langgraph_node === "string" ? meta.langgraph_node : undefined;
    }
    this.text += textOf(message.content);
  }

  /** What was streamed: the message id, its node and text; null when no text was. */
  get streamed(): { id: string; node: string | undefined; text: string } | null {
    return this.id && this.text ? { id: this.id, node: this.node, text: this.text } : null;
  }
}

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((b) => (typeof b === "string" ? b : (b as { type?: unknown; text?: unknown })?.type === "text" ? String((b as { text?: unknown }).text ?? "") : "")).join("") : "";

/**
 * Keeps the answer a run streamed before it ended early: when the thread's newest checkpoint lacks the message
 * being streamed (its step never finished), appends an AI message with that id and the text so far, written as
 * the node that streamed it, with `response_metadata.finish_reason` `reason` (`interrupted`, `error`).
 * @returns whether a message was written. @throws a store error.
 */
export async function keepPartialAnswer(agent: unknown, checkpointer: BaseCheckpointSaver, threadId: string, partial: PartialAnswer, reason: string): Promise<boolean> {
  const streamed = partial.streamed;
  if (!streamed) return false;
  const tuple = await latestCheckpoint(checkpointer, threadId);
  if (messagesOf(tuple?.checkpoint.channel_values).some((m) => m.id === streamed.id)) return false;
  const message = new AIMessage({ id: streamed.id, content: streamed.text, response_metadata: { finish_reason: reason } });
  const graph = ((agent as { graph?: TitleWritableGraph }).graph ?? agent) as TitleWritableGraph;
  await graph.updateState({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, { messages: [message] }, streamed.node);
  return true;
}
