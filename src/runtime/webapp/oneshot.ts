// One model call outside a run (DeerFlow deerflow/utils/oneshot_llm.py): follow-up suggestions, input polish.
import { HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import type { AppConfig } from "../../config/schema.js";
import { createChatModel } from "../../models/create-chat-model.js";

/** Text of a model answer: string content, or the text blocks of list content. */
export function answerText(message: BaseMessage): string {
  const c = message.content;
  if (typeof c === "string") return c;
  return c.map((b) => (typeof b === "string" ? b : b.type === "text" ? String((b as { text?: unknown }).text ?? "") : "")).join("");
}

/** Upstream llm_text: drops `<think>...</think>` blocks and a wrapping markdown code fence. */
export function cleanModelText(text: string): string {
  const noThink = text.replace(/<think>[\s\S]*?<\/think>/g, "");
  const fence = /^\s*```[A-Za-z0-9_-]*\n([\s\S]*?)\n?```\s*$/.exec(noThink);
  return (fence ? fence[1] : noThink).trim();
}

/**
 * Calls the model `modelName` (the first configured model when null) once with a system instruction and one
 * user message, without tools or thinking.
 * @returns the cleaned answer text.
 * @throws NotFoundError for an unknown model; whatever the provider throws.
 */
export async function runOneshot(appConfig: AppConfig, modelName: string | null | undefined, system: string, user: string, signal?: AbortSignal): Promise<string> {
  const model = await createChatModel(modelName ?? null, { appConfig, thinkingEnabled: false });
  const answer = await model.invoke([new SystemMessage(system), new HumanMessage(user)], { signal });
  return cleanModelText(answerText(answer));
}

/**
 * Upstream `_parse_json_string_list`: the first `[...]` span of the answer parsed as a JSON array, keeping
 * non-empty strings. Null when there is no such array.
 */
export function parseJsonStringList(text: string): string[] | null {
  const start = text.indexOf("[");
  const end = text.lastIndexOf("]");
  if (start === -1 || end <= start) return null;
  try {
    const data = JSON.parse(text.slice(start, end + 1)) as unknown;
    if (!Array.isArray(data)) return null;
    return data.filter((x): x is string => typeof x === "string").map((s) => s.trim()).filter(Boolean);
  } catch {
    return null;
  }
}
