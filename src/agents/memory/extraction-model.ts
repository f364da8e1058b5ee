// The model DeerMem's memory update calls (DeerFlow DeerMemConfig `model_name` / `model`), apart from the manager so
// the manager stays about storage and batching.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { initChatModel } from "langchain";
import type { AppConfig } from "../../config/schema.js";
import { createChatModel } from "../../models/create-chat-model.js";
import type { DeerMemConfig } from "./memory-config.js";

/**
 * The model that extracts memory: `model_name` (a `models[]` entry); else `model` (a bare name of a `models[]` entry,
 * or LangChain `initChatModel` with provider/api key/base URL/temperature); else the default model.
 * @throws the model factory's errors (unknown entry, missing provider package).
 */
export async function extractionModel(cfg: DeerMemConfig, appConfig: AppConfig): Promise<BaseChatModel> {
  const sub = cfg.model;
  if (cfg.model_name || !sub?.model) return createChatModel(cfg.model_name, { thinkingEnabled: false, appConfig });
  const direct = sub.provider || sub.api_key || sub.base_url || sub.temperature != null;
  if (!direct && appConfig.models.some((m) => m.name === sub.model)) return createChatModel(sub.model, { thinkingEnabled: false, appConfig });
  const provider = sub.provider ?? "openai";
  return (await initChatModel(sub.model, {
    modelProvider: provider,
    ...(sub.api_key ? { apiKey: sub.api_key } : {}),
    ...(sub.temperature != null ? { temperature: sub.temperature } : {}),
    ...(sub.base_url ? (provider === "openai" ? { configuration: { baseURL: sub.base_url } } : { baseUrl: sub.base_url }) : {}),
  })) as unknown as BaseChatModel;
}
