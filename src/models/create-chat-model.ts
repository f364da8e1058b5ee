// Port of DeerFlow models/factory.py (create_chat_model): `use:` resolution, thinking and reasoning-effort rules,
// then a constructor call on the resolved LangChain chat model class.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { getAppConfig } from "../config/app-config.js";
import { getProjectRoot } from "../config/paths.js";
import { getModelConfig, type AppConfig, type ModelConfig } from "../config/schema.js";
import { DeerflowError, NotFoundError } from "../errors.js";
import { getLogger } from "../logger.js";
import { providerKindOf, toProviderFields } from "./provider-fields.js";
import { resolveClass } from "./resolve-use.js";
import { createRetryHandler } from "./retry-handler.js";
import { MODEL_NAME_METADATA_KEY } from "../observability/run-observer.js";

/** Options of {@link createChatModel}. */
export interface CreateChatModelOptions {
  /** Whether thinking is requested (default false). */
  thinkingEnabled?: boolean;
  /** Requested reasoning effort (`minimal|low|medium|high|...`); dropped unless the model `supports_reasoning_effort`. */
  reasoningEffort?: string | null;
  /** Per-agent settings (`model_settings`: temperature, max_tokens, ...) layered over the entry; null values ignored. */
  modelOverrides?: Record<string, unknown> | null;
  /** Config to read the model from; default `getAppConfig()`. */
  appConfig?: AppConfig;
}

/** Keys that describe the model to DeerFlow and never reach the provider (DeerFlow `factory.py:209-230`). */
const DEERFLOW_ONLY_KEYS = new Set([
  "use", "name", "display_name", "description", "supports_thinking", "supports_reasoning_effort",
  "when_thinking_enabled", "when_thinking_disabled", "thinking", "supports_vision", "context_window", "pricing",
  "fallbacks",
]);

/** The model does not support what was asked of it (thinking settings without `supports_thinking`). */
export class ModelConfigError extends DeerflowError {
  constructor(message: string) {
    super("validation_failed", message);
  }
}

type Settings = Record<string, unknown>;
const isObject = (v: unknown): v is Settings => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Computes the provider settings (snake_case, as in config.yaml) for one model entry. Mirrors DeerFlow
 * `create_chat_model` steps 2-8: strip DeerFlow-only keys and nulls; apply overrides; thinking ON applies
 * `when_thinking_enabled` (+ the `thinking` shortcut) shallowly; thinking OFF applies `when_thinking_disabled`,
 * else disables the thinking form the entry uses (`extra_body.thinking` -> `{type: disabled}` and effort
 * `minimal`; `extra_body.chat_template_kwargs` -> `false`; top-level `thinking` -> `{type: disabled}`);
 * `reasoning_effort` is dropped unless supported; `api_base` becomes `base_url`.
 * Precedence (a port decision, upstream raises a duplicate-keyword error): the caller's `reasoningEffort`
 * beats a configured one, except that the thinking-off rule's `minimal` stands.
 * @throws ModelConfigError when thinking is requested, the entry has thinking settings and `supports_thinking` is false.
 */
export function buildModelSettings(entry: ModelConfig, options: CreateChatModelOptions = {}): Settings {
  const settings: Settings = {};
  for (const [k, v] of Object.entries(entry)) if (v !== null && v !== undefined && !DEERFLOW_ONLY_KEYS.has(k)) settings[k] = structuredClone(v);
  delete settings.stream_chunk_timeout; // LangChain JS has no per-chunk timeout; `timeout` covers the request.
  for (const [k, v] of Object.entries(options.modelOverrides ?? {})) if (v !== null && v !== undefined) settings[k] = v;

  let effective: Settings | null = entry.when_thinking_enabled ? structuredClone(entry.when_thinking_enabled) : null;
  if (entry.thinking) {
    effective ??= {};
    effective.thinking = { ...(isObject(effective.thinking) ? effective.thinking : {}), ...entry.thinking };
  }
  const hasThinkingSettings = effective !== null;
  let effortFromThinkingRule = false;

  if (options.thinkingEnabled) {
    if (hasThinkingSettings) {
      if (!entry.supports_thinking) {
        throw new ModelConfigError(`Model '${entry.name}' does not support thinking; set \`supports_thinking: true\` in its config entry or turn thinking off.`);
      }
      Object.assign(settings, effective);
    }
  } else if (entry.when_thinking_disabled) {
    Object.assign(settings, structuredClone(entry.when_thinking_disabled));
  } else if (effective) {
    const extra = isObject(effective.extra_body) ? effective.extra_body : {};
    const template = isObject(extra.chat_template_kwargs) ? extra.chat_template_kwargs : null;
    if (isObject(extra.thinking) && "type" in extra.thinking) {
      const body = isObject(settings.extra_body) ? settings.extra_body : {};
      settings.extra_body = { ...body, thinking: { ...(isObject(body.thinking) ? body.thinking : {}), type: "disabled" } };
      settings.reasoning_effort = "minimal";
      effortFromThinkingRule = true;
    } else if (template && ("thinking" in template || "enable_thinking" in template)) {
      const body = isObject(settings.extra_body) ? settings.extra_body : {};
      const current = isObject(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
      const off: Settings = {};
      for (const key of ["thinking", "enable_thinking"]) if (key in template) off[key] = false;
      settings.extra_body = { ...body, chat_template_kwargs: { ...current, ...off } };
    } else if (isObject(effective.thinking) && "type" in effective.thinking) {
      settings.thinking = { type: "disabled" };
    }
  }
  if (options.reasoningEffort && !effortFromThinkingRule) settings.reasoning_effort = options.reasoningEffort;
  if (!entry.supports_reasoning_effort) delete settings.reasoning_effort;
  if ("api_base" in settings) {
    if (!("base_url" in settings) && !("openai_api_base" in settings)) settings.base_url = settings.api_base;
    delete settings.api_base;
  }
  return settings;
}

const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Maps snake_case settings onto `ChatOpenAI`'s constructor: `api_key` -> `apiKey`, `base_url` ->
 * `configuration.baseURL`, `timeout`/`request_timeout` (seconds) -> `timeout` (ms), and every body extra
 * (`extra_body`, `reasoning_effort`, `thinking`, `model_kwargs`) -> `modelKwargs`, which is spread into the request
 * body. Unknown keys are dropped with a warning, so config-only data never reaches the provider.
 */
export function toOpenAIFields(settings: Settings, modelName: string): Settings {
  const fields: Settings = {};
  const configuration: Settings = {};
  const modelKwargs: Settings = {};
  const direct: Record<string, string> = {
    model: "model", temperature: "temperature", top_p: "topP", n: "n", stop: "stop", max_tokens: "maxTokens",
    max_completion_tokens: "maxTokens", presence_penalty: "presencePenalty", frequency_penalty: "frequencyPenalty",
    max_retries: "maxRetries", streaming: "streaming", stream_usage: "streamUsage", use_responses_api: "useResponsesApi",
    output_version: "outputVersion", api_key: "apiKey", openai_api_key: "apiKey", seed: "seed", logprobs: "logprobs",
    top_logprobs: "topLogprobs", user: "user", service_tier: "service_tier",
  };
  for (const [key, value] of Object.entries(settings)) {
    if (key in direct) fields[direct[key]] = value;
    else if (key === "base_url" || key === "openai_api_base") configuration.baseURL = value;
    else if (key === "default_headers") configuration.defaultHeaders = value;
    else if (key === "organization") configuration.organization = value;
    else if (key === "timeout" || key === "request_timeout") fields.timeout = Math.round(Number(value) * 1000);
    // MindIE's httpx timeouts (upstream mindie_provider.py): the JS client has one request timeout, the read one.
    else if (key === "read_timeout") fields.timeout ??= Math.round(Number(value) * 1000);
    else if (key === "connect_timeout" || key === "write_timeout" || key === "pool_timeout") continue;
    // vLLM's cumulative usage snapshots: the JS client keeps only a stream's last usage, so the total is right as is.
    else if (key === "cumulative_stream_usage") continue;
    else if (key === "extra_body" && isObject(value)) Object.assign(modelKwargs, value);
    else if (key === "model_kwargs" && isObject(value)) Object.assign(modelKwargs, value);
    else if (key === "reasoning_effort" || key === "thinking") modelKwargs[key] = value;
    else getLogger().warn({ model: modelName, key }, `model '${modelName}': key '${key}' is not a ChatOpenAI option and is ignored`);
  }
  if (Object.keys(configuration).length) fields.configuration = configuration;
  if (Object.keys(modelKwargs).length) fields.modelKwargs = modelKwargs;
  return fields;
}

/** Generic classes get their settings camelCased at the top level (`max_tokens` -> `maxTokens`). */
function toGenericFields(settings: Settings): Settings {
  return Object.fromEntries(Object.entries(settings).map(([k, v]) => [camel(k), v]));
}

/**
 * Whether `cls` is `ChatOpenAI` or extends it. `@langchain/openai` (and the `openai` SDK, ~15 MB of RSS once loaded)
 * is imported only for a class with a `ChatOpenAI` in its prototype chain, so a server whose models are all other
 * providers never loads it; for an OpenAI model the module is already loaded by then.
 */
async function isChatOpenAIClass(cls: abstract new (...args: never[]) => unknown): Promise<boolean> {
  let named = false;
  for (let c: unknown = cls; typeof c === "function" && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    if ((c as { name?: string }).name === "ChatOpenAI") {
      named = true;
      break;
    }
  }
  if (!named) return false;
  const { ChatOpenAI } = await import("@langchain/openai");
  return cls === (ChatOpenAI as unknown) || cls.prototype instanceof ChatOpenAI;
}

/**
 * Creates the chat model named `name` (first configured model when null). Mirrors DeerFlow `create_chat_model`.
 * @throws NotFoundError "Model X not found in config" for an unknown name, or when no model is configured.
 * @throws ModelConfigError for thinking on a model whose entry forbids it (see {@link buildModelSettings}).
 * @throws UseResolutionError when the entry's `use:` cannot be imported or is not a chat model class.
 */
export async function createChatModel(name: string | null | undefined, options: CreateChatModelOptions = {}): Promise<BaseChatModel> {
  const appConfig = options.appConfig ?? getAppConfig();
  const entry = name ? getModelConfig(appConfig, name) : appConfig.models[0];
  if (!entry) {
    throw new NotFoundError(name ? `Model ${name} not found in config` : "No chat models are configured. Please configure at least one model in config.yaml.");
  }
  const cls = await resolveClass(entry.use, BaseChatModel, getProjectRoot());
  const settings = buildModelSettings(entry, options);
  const isOpenAI = await isChatOpenAIClass(cls);
  const kind = isOpenAI ? null : providerKindOf(cls);
  const fields = isOpenAI ? toOpenAIFields(settings, entry.name) : kind ? toProviderFields(kind, settings, entry.name) : toGenericFields(settings);
  // The metadata names the config entry, so metrics and logs say `gpt-4o-mini`, not whatever the provider calls
  // it; every failed provider attempt of an OpenAI-compatible model is logged with the run's ids and counted
  // (retry-handler.ts).
  const tag = { [MODEL_NAME_METADATA_KEY]: entry.name };
  if (kind) fields.onFailedAttempt = createRetryHandler(entry.name);
  if (!isOpenAI) {
    const model = new cls(fields);
    model.metadata = { ...(model.metadata ?? {}), ...tag };
    return model;
  }
  // Passed to the constructor: ChatOpenAI hands its fields on to the inner client models it delegates to.
  fields.onFailedAttempt = createRetryHandler(entry.name);
  fields.metadata = { ...(isObject(fields.metadata) ? fields.metadata : {}), ...tag };
  return new cls(fields);
}
