// Constructor fields of the bundled non-OpenAI providers from a model entry's snake_case settings, as upstream's
// Python classes take them (langchain_anthropic.ChatAnthropic, langchain_google_genai.ChatGoogleGenerativeAI,
// langchain_ollama.ChatOllama): so DeerFlow's model entries work unchanged. Thinking and reasoning effort arrive
// here already switched by `buildModelSettings` (the `thinking` shortcut, when_thinking_enabled/disabled).
import { getLogger } from "../logger.js";

type Settings = Record<string, unknown>;
const isObject = (v: unknown): v is Settings => typeof v === "object" && v !== null && !Array.isArray(v);
const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const seconds = (v: unknown) => Math.round(Number(v) * 1000);

/** The bundled provider a resolved class is, by the class names in its prototype chain; null for others. */
export type ProviderKind = "anthropic" | "google" | "ollama";
const KIND_BY_CLASS: Record<string, ProviderKind> = { ChatAnthropic: "anthropic", ChatAnthropicMessages: "anthropic", ChatGoogleGenerativeAI: "google", ChatOllama: "ollama" };

/** Which bundled provider `cls` is or extends (by name, so the check never imports a provider package). */
export function providerKindOf(cls: unknown): ProviderKind | null {
  for (let c: unknown = cls; typeof c === "function" && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    const kind = KIND_BY_CLASS[(c as { name?: string }).name ?? ""];
    if (kind) return kind;
  }
  return null;
}

/** Maps every key through `map` (which returns false for a key it does not know); unknown keys are warned and dropped. */
function mapFields(settings: Settings, modelName: string, provider: string, map: (key: string, value: unknown, fields: Settings) => boolean): Settings {
  const fields: Settings = {};
  for (const [key, value] of Object.entries(settings)) {
    if (!map(key, value, fields)) getLogger().warn({ model: modelName, key }, `model '${modelName}': key '${key}' is not a ${provider} option and is ignored`);
  }
  return fields;
}

const merge = (fields: Settings, key: string, value: Settings) => (fields[key] = { ...(isObject(fields[key]) ? fields[key] : {}), ...value });

/** Anthropic's effort levels; DeerFlow's `minimal` (the thinking-off rule) is the lowest. */
const anthropicEffort = (v: unknown) => (v === "minimal" ? "low" : v);

/**
 * `ChatAnthropic` fields: `api_key`/`anthropic_api_key` -> `apiKey`; `base_url`/`anthropic_api_url` ->
 * `anthropicApiUrl`; `default_request_timeout`/`timeout` (seconds) -> `clientOptions.timeout` (ms);
 * `default_headers` -> `clientOptions.defaultHeaders`; `max_tokens`, `temperature`, `top_k`, `top_p`,
 * `stop_sequences`, `max_retries`, `streaming`, `stream_usage`, `betas` camelCased; `thinking` as is;
 * `reasoning_effort`/`effort` -> `outputConfig.effort`; `model_kwargs`/`extra_body` -> `invocationKwargs`.
 */
export function toAnthropicFields(settings: Settings, modelName: string): Settings {
  const direct = new Set(["model", "temperature", "top_k", "top_p", "max_tokens", "stop_sequences", "max_retries", "streaming", "stream_usage", "betas", "thinking"]);
  return mapFields(settings, modelName, "ChatAnthropic", (key, value, fields) => {
    if (direct.has(key)) fields[camel(key)] = value;
    else if (key === "api_key" || key === "anthropic_api_key") fields.apiKey = value;
    else if (key === "base_url" || key === "anthropic_api_url" || key === "api_url") fields.anthropicApiUrl = value;
    else if (key === "max_tokens_to_sample") fields.maxTokens = value;
    else if (key === "stop") fields.stopSequences = value;
    else if (key === "default_request_timeout" || key === "timeout") merge(fields, "clientOptions", { timeout: seconds(value) });
    else if (key === "default_headers") merge(fields, "clientOptions", { defaultHeaders: value });
    else if (key === "reasoning_effort" || key === "effort") merge(fields, "outputConfig", { effort: anthropicEffort(value) });
    else if ((key === "model_kwargs" || key === "extra_body") && isObject(value)) merge(fields, "invocationKwargs", value);
    else return false;
    return true;
  });
}

/** Gemini thinking levels for DeerFlow's reasoning efforts. */
const GEMINI_LEVEL: Record<string, string> = { minimal: "LOW", low: "LOW", medium: "MEDIUM", high: "HIGH", xhigh: "HIGH" };

/**
 * `ChatGoogleGenerativeAI` fields: `api_key`/`google_api_key`/`gemini_api_key` -> `apiKey`; `base_url` ->
 * `baseUrl`; `max_tokens`/`max_output_tokens` -> `maxOutputTokens`; `thinking_budget`, `include_thoughts`,
 * `thinking_level` -> `thinkingConfig`; the `thinking` shortcut (`{type: enabled, budget_tokens}` /
 * `{type: disabled}`) -> thoughts on with that budget / budget 0; `reasoning_effort` -> `thinkingConfig.thinkingLevel`.
 * `timeout` is dropped: the Gemini client has no request timeout (the run's limits still apply).
 */
export function toGoogleFields(settings: Settings, modelName: string): Settings {
  const direct = new Set(["model", "temperature", "top_k", "top_p", "stop_sequences", "max_retries", "streaming", "stream_usage", "safety_settings", "api_version", "json"]);
  const fields = mapFields(settings, modelName, "ChatGoogleGenerativeAI", (key, value, fields) => {
    if (direct.has(key)) fields[camel(key)] = value;
    else if (key === "api_key" || key === "google_api_key" || key === "gemini_api_key") fields.apiKey = value;
    else if (key === "base_url") fields.baseUrl = value;
    else if (key === "max_tokens" || key === "max_output_tokens") fields.maxOutputTokens = value;
    else if (key === "stop") fields.stopSequences = value;
    else if (key === "thinking_budget") merge(fields, "thinkingConfig", { thinkingBudget: value });
    else if (key === "include_thoughts") merge(fields, "thinkingConfig", { includeThoughts: value });
    else if (key === "thinking_level") merge(fields, "thinkingConfig", { thinkingLevel: String(value).toUpperCase() });
    else if (key === "reasoning_effort") merge(fields, "thinkingConfig", { thinkingLevel: GEMINI_LEVEL[String(value)] ?? String(value).toUpperCase() });
    else if (key === "thinking" && isObject(value)) {
      const on = value.type !== "disabled";
      merge(fields, "thinkingConfig", on ? { includeThoughts: true, ...(value.budget_tokens !== undefined ? { thinkingBudget: value.budget_tokens } : {}) } : { thinkingBudget: 0 });
    } else if (key === "timeout" || key === "request_timeout") return true;
    else return false;
    return true;
  });
  // Gemini takes a thinking level or a budget, not both: a requested effort replaces the budget, unless thinking is off (0).
  const thinking = fields.thinkingConfig as Settings | undefined;
  if (thinking?.thinkingLevel !== undefined && thinking.thinkingBudget !== undefined) {
    if (thinking.thinkingBudget === 0) delete thinking.thinkingLevel;
    else delete thinking.thinkingBudget;
  }
  return fields;
}

/** Ollama's think levels (gpt-oss) for DeerFlow's reasoning efforts. */
const OLLAMA_LEVEL: Record<string, string> = { minimal: "low", low: "low", medium: "medium", high: "high", xhigh: "high" };

/**
 * `ChatOllama` fields: `base_url` -> `baseUrl`; `reasoning`/`think` -> `think` (Ollama's native thinking switch);
 * the `thinking` shortcut `{type: enabled|disabled}` -> `think: true|false`; `client_kwargs.headers` /
 * `headers` -> `headers`; the other options (`num_predict`, `num_ctx`, `temperature`, `top_k`, `keep_alive`, ...)
 * camelCased; `reasoning_effort` -> `think: "low"|"medium"|"high"` unless thinking is off. `timeout` is dropped
 * (the Ollama client has none).
 */
export function toOllamaFields(settings: Settings, modelName: string): Settings {
  const options = new Set(["model", "temperature", "top_k", "top_p", "num_predict", "num_ctx", "num_gpu", "num_thread", "keep_alive", "seed", "stop", "format", "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty", "mirostat", "mirostat_eta", "mirostat_tau", "tfs_z", "typical_p", "num_batch", "num_keep", "streaming", "check_or_pull_model"]);
  let effort: string | undefined;
  const fields = mapFields(settings, modelName, "ChatOllama", (key, value, fields) => {
    if (options.has(key)) fields[camel(key)] = value;
    else if (key === "reasoning_effort") effort = OLLAMA_LEVEL[String(value)] ?? String(value);
    else if (key === "base_url") fields.baseUrl = value;
    else if (key === "reasoning" || key === "think") fields.think = value === true || value === "true";
    else if (key === "thinking" && isObject(value)) fields.think = value.type !== "disabled";
    else if (key === "headers") fields.headers = value;
    else if (key === "client_kwargs" && isObject(value)) {
      if (isObject(value.headers)) fields.headers = value.headers;
    } else if (key === "timeout" || key === "request_timeout") return true;
    else return false;
    return true;
  });
  // A requested effort is Ollama's think level (`think: "high"`), unless thinking is off.
  if (effort && fields.think !== false) fields.think = effort;
  return fields;
}

/** The constructor fields for a bundled provider kind. */
export function toProviderFields(kind: ProviderKind, settings: Settings, modelName: string): Settings {
  if (kind === "anthropic") return toAnthropicFields(settings, modelName);
  if (kind === "google") return toGoogleFields(settings, modelName);
  return toOllamaFields(settings, modelName);
}
