import { ChatOpenAI } from "@langchain/openai";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ModelConfigSchema, parseAppConfig } from "../../src/config/schema.js";
import { NotFoundError } from "../../src/errors.js";
import { getLogger, setLogger } from "../../src/logger.js";
import { buildModelSettings, createChatModel, ModelConfigError, toOpenAIFields } from "../../src/models/create-chat-model.js";
import { ScriptedChatModel } from "../../src/models/scripted-chat-model.js";

const entry = (e: Record<string, unknown>) => ModelConfigSchema.parse({ name: "m", use: "langchain_openai:ChatOpenAI", model: "gpt-test", ...e });
const ANTHROPIC = "langchain_anthropic:ChatAnthropic";

describe("buildModelSettings: constructor hygiene (CF-032)", () => {
  it("never passes DeerFlow-only keys such as pricing and context_window to the provider", () => {
    const s = buildModelSettings(
      entry({
        display_name: "M", description: "d", supports_vision: true, context_window: 200000,
        pricing: { currency: "CNY", input: 1 }, max_tokens: 100, supports_thinking: false, supports_reasoning_effort: false,
      }),
    );
    expect(s).toEqual({ model: "gpt-test", max_tokens: 100 });
  });

  it("drops null values and keeps unknown provider keys", () => {
    const s = buildModelSettings(entry({ temperature: null, api_key: "k", timeout: 30, use_responses_api: true }));
    expect(s).toEqual({ model: "gpt-test", api_key: "k", timeout: 30, use_responses_api: true });
  });

  it("returns a deep copy: mutating the settings never touches the config entry", () => {
    const e = entry({ extra_body: { top_k: 20 } });
    const s = buildModelSettings(e);
    (s.extra_body as Record<string, unknown>).top_k = 99;
    expect((e as Record<string, unknown>).extra_body).toEqual({ top_k: 20 });
  });
});

describe("buildModelSettings: thinking ON (CF-033)", () => {
  it("fails for thinking settings on a model that does not support thinking", () => {
    const e = entry({ supports_thinking: false, when_thinking_enabled: { thinking: { type: "enabled", budget_tokens: 5000 } } });
    expect(() => buildModelSettings(e, { thinkingEnabled: true })).toThrow(ModelConfigError);
    expect(() => buildModelSettings(e, { thinkingEnabled: true })).toThrow("does not support thinking");
  });

  it("fails for an explicitly empty when_thinking_enabled as well", () => {
    expect(() => buildModelSettings(entry({ when_thinking_enabled: {} }), { thinkingEnabled: true })).toThrow("does not support thinking");
  });

  it("applies when_thinking_enabled on a model that supports thinking", () => {
    const s = buildModelSettings(entry({ supports_thinking: true, when_thinking_enabled: { temperature: 1.0, max_tokens: 16000 }, max_tokens: 4096 }), {
      thinkingEnabled: true,
    });
    expect(s.temperature).toBe(1.0);
    expect(s.max_tokens).toBe(16000);
  });

  it("is a no-op without thinking settings, even when the model does not support thinking", () => {
    expect(buildModelSettings(entry({ supports_thinking: false }), { thinkingEnabled: true })).toEqual({ model: "gpt-test" });
  });

  it("applies when_thinking_enabled shallowly: its extra_body replaces the profile's", () => {
    const s = buildModelSettings(
      entry({ supports_thinking: true, extra_body: { top_k: 20 }, when_thinking_enabled: { extra_body: { thinking: { type: "enabled" } } } }),
      { thinkingEnabled: true },
    );
    expect(s.extra_body).toEqual({ thinking: { type: "enabled" } });
  });
});

describe("buildModelSettings: thinking OFF (CF-035, CF-037)", () => {
  it("disables the native top-level thinking form without extra_body or reasoning_effort", () => {
    const s = buildModelSettings(
      entry({ use: ANTHROPIC, supports_thinking: true, when_thinking_enabled: { thinking: { type: "enabled", budget_tokens: 8000 } } }),
    );
    expect(s.thinking).toEqual({ type: "disabled" });
    expect(s).not.toHaveProperty("extra_body");
    expect(s).not.toHaveProperty("reasoning_effort");
  });

  it("passes nothing thinking-related when there are no thinking settings", () => {
    const s = buildModelSettings(entry({ supports_thinking: true }));
    expect(s).not.toHaveProperty("extra_body");
    expect(s).not.toHaveProperty("thinking");
    expect(s).not.toHaveProperty("reasoning_effort");
  });

  it.each([
    ["thinking", { thinking: false }],
    ["enable_thinking", { enable_thinking: false }],
  ])("sets chat_template_kwargs.%s to false and keeps other extra_body keys", (key, expected) => {
    const s = buildModelSettings(
      entry({
        use: "deerflow.models.vllm_provider:VllmChatModel", supports_thinking: true, extra_body: { top_k: 20 },
        when_thinking_enabled: { extra_body: { chat_template_kwargs: { [key]: true } } },
      }),
    );
    expect(s.extra_body).toEqual({ top_k: 20, chat_template_kwargs: expected });
    expect(s).not.toHaveProperty("reasoning_effort");
  });

  it("disables extra_body.thinking and sets reasoning_effort minimal on a reasoning-capable model", () => {
    const s = buildModelSettings(
      entry({
        supports_thinking: true, supports_reasoning_effort: true, extra_body: { top_k: 1 },
        when_thinking_enabled: { extra_body: { thinking: { type: "enabled", budget: 5 } } },
      }),
    );
    expect(s.extra_body).toEqual({ top_k: 1, thinking: { type: "disabled" } });
    expect(s.reasoning_effort).toBe("minimal");
  });

  it("drops the minimal reasoning_effort when the model does not support reasoning effort", () => {
    const s = buildModelSettings(entry({ supports_thinking: true, when_thinking_enabled: { extra_body: { thinking: { type: "enabled" } } } }));
    expect(s.extra_body).toEqual({ thinking: { type: "disabled" } });
    expect(s).not.toHaveProperty("reasoning_effort");
  });

  it("gives when_thinking_disabled full precedence", () => {
    const s = buildModelSettings(
      entry({
        supports_thinking: true, when_thinking_enabled: { thinking: { type: "enabled" } },
        when_thinking_disabled: { temperature: 0.1, extra_body: { mode: "fast" } },
      }),
    );
    expect(s).toEqual({ model: "gpt-test", temperature: 0.1, extra_body: { mode: "fast" } });
  });
});

describe("buildModelSettings: thinking shortcut (CF-038)", () => {
  const base = { use: ANTHROPIC, supports_thinking: true, supports_reasoning_effort: false, thinking: { type: "enabled", budget_tokens: 8000 } };

  it("enables thinking with the shortcut when thinking is on", () => {
    expect(buildModelSettings(entry(base), { thinkingEnabled: true }).thinking).toEqual({ type: "enabled", budget_tokens: 8000 });
  });

  it("merges the shortcut with when_thinking_enabled", () => {
    const s = buildModelSettings(entry({ ...base, when_thinking_enabled: { max_tokens: 16000 } }), { thinkingEnabled: true });
    expect(s.thinking).toEqual({ type: "enabled", budget_tokens: 8000 });
    expect(s.max_tokens).toBe(16000);
  });

  it("disables thinking with the shortcut when thinking is off, without leaking the shortcut or extra_body", () => {
    const s = buildModelSettings(entry(base));
    expect(s.thinking).toEqual({ type: "disabled" });
    expect(s).not.toHaveProperty("extra_body");
  });
});

describe("buildModelSettings: endpoint alias and stream chunk timeout (CF-039, port decision)", () => {
  it("renames api_base to base_url", () => {
    const s = buildModelSettings(entry({ api_base: "http://localhost:4001/v1" }));
    expect(s.base_url).toBe("http://localhost:4001/v1");
    expect(s).not.toHaveProperty("api_base");
  });

  it("keeps an explicit base_url over api_base and drops api_base", () => {
    const s = buildModelSettings(entry({ base_url: "http://canonical/v1", api_base: "http://alias/v1" }));
    expect(s.base_url).toBe("http://canonical/v1");
    expect(s).not.toHaveProperty("api_base");
  });

  it("drops stream_chunk_timeout because LangChain JS has no per-chunk timeout", () => {
    expect(buildModelSettings(entry({ stream_chunk_timeout: 120 }))).not.toHaveProperty("stream_chunk_timeout");
    expect(buildModelSettings(entry({ use: ANTHROPIC, stream_chunk_timeout: 120 }))).not.toHaveProperty("stream_chunk_timeout");
    expect(buildModelSettings(entry({}))).not.toHaveProperty("stream_chunk_timeout");
  });
});

describe("buildModelSettings: per-agent overrides and reasoning effort (CF-040)", () => {
  it("layers overrides on top of the profile", () => {
    const s = buildModelSettings(entry({ max_tokens: 4096 }), { modelOverrides: { temperature: 0.2, max_tokens: 12000 } });
    expect(s.temperature).toBe(0.2);
    expect(s.max_tokens).toBe(12000);
  });

  it("ignores null override values", () => {
    const s = buildModelSettings(entry({ max_tokens: 4096 }), { modelOverrides: { temperature: null, max_tokens: null } });
    expect(s).not.toHaveProperty("temperature");
    expect(s.max_tokens).toBe(4096);
    expect(buildModelSettings(entry({ max_tokens: 4096 }), { modelOverrides: null }).max_tokens).toBe(4096);
  });

  it("resolves a configured reasoning_effort plus the thinking-off rule to minimal without error", () => {
    const s = buildModelSettings(
      entry({ supports_thinking: true, supports_reasoning_effort: true, reasoning_effort: "high", when_thinking_enabled: { extra_body: { thinking: { type: "enabled" } } } }),
      { reasoningEffort: "high" },
    );
    expect(s.reasoning_effort).toBe("minimal");
  });

  it("lets the caller's reasoning effort beat a configured one", () => {
    const s = buildModelSettings(entry({ supports_reasoning_effort: true, reasoning_effort: "low" }), { reasoningEffort: "high" });
    expect(s.reasoning_effort).toBe("high");
  });

  it("drops reasoning effort, from config or caller, unless the model supports it", () => {
    const s = buildModelSettings(entry({ reasoning_effort: "low" }), { reasoningEffort: "high" });
    expect(s).not.toHaveProperty("reasoning_effort");
  });
});

describe("toOpenAIFields", () => {
  const original = getLogger();
  afterEach(() => setLogger(original));

  it("maps snake_case settings onto ChatOpenAI's constructor", () => {
    const fields = toOpenAIFields(
      {
        model: "gpt-test", api_key: "sk", base_url: "http://h/v1", timeout: 30, max_tokens: 100, temperature: 0.2, top_p: 0.9,
        default_headers: { "x-a": "1" }, extra_body: { top_k: 20 }, reasoning_effort: "low", thinking: { type: "disabled" }, max_retries: 2,
      },
      "m",
    );
    expect(fields).toEqual({
      model: "gpt-test",
      apiKey: "sk",
      configuration: { baseURL: "http://h/v1", defaultHeaders: { "x-a": "1" } },
      timeout: 30000,
      maxTokens: 100,
      temperature: 0.2,
      topP: 0.9,
      maxRetries: 2,
      modelKwargs: { top_k: 20, reasoning_effort: "low", thinking: { type: "disabled" } },
    });
  });

  it("converts request_timeout seconds to milliseconds and merges model_kwargs into modelKwargs", () => {
    expect(toOpenAIFields({ request_timeout: 1.5, model_kwargs: { a: 1 }, extra_body: { b: 2 } }, "m")).toEqual({
      timeout: 1500,
      modelKwargs: { a: 1, b: 2 },
    });
  });

  it("drops an unknown key with a warning", () => {
    const lines: { msg: string }[] = [];
    setLogger(pino({ level: "warn" }, { write: (s: string) => void lines.push(JSON.parse(s)) }));
    expect(toOpenAIFields({ model: "x", bogus_key: 1 }, "m")).toEqual({ model: "x" });
    expect(lines.some((l) => l.msg.includes("bogus_key"))).toBe(true);
  });
});

describe("createChatModel", () => {
  const config = parseAppConfig({
    models: [
      { name: "scripted", use: "deerflow-gateway:ScriptedChatModel", model: "scripted-echo", token_delay_ms: 5 },
      {
        name: "openai", use: "langchain_openai:ChatOpenAI", model: "gpt-4o-mini", api_key: "sk-test", base_url: "http://fake/v1",
        max_tokens: 256, timeout: 10, pricing: { currency: "USD" }, context_window: 128000, supports_thinking: true,
        when_thinking_enabled: { extra_body: { thinking: { type: "enabled" } } },
      },
      { name: "ghost-class", use: "langchain_openai:NoSuchModel", model: "x" },
    ],
  });

  it("builds the first configured model when no name is given", async () => {
    const m = await createChatModel(null, { appConfig: config });
    expect(m).toBeInstanceOf(ScriptedChatModel);
    expect((m as ScriptedChatModel).model).toBe("scripted-echo");
    expect((m as ScriptedChatModel).tokenDelayMs).toBe(5);
  });

  it("builds a ChatOpenAI with mapped fields and the thinking-off body extras", async () => {
    const m = await createChatModel("openai", { appConfig: config });
    expect(m).toBeInstanceOf(ChatOpenAI);
    const o = m as unknown as Record<string, unknown>;
    expect(o.model).toBe("gpt-4o-mini");
    expect(o.apiKey).toBe("sk-test");
    expect(o.maxTokens).toBe(256);
    expect(o.timeout).toBe(10_000);
    expect(o.modelKwargs).toEqual({ thinking: { type: "disabled" } });
    expect((o.clientConfig as Record<string, unknown>).baseURL).toBe("http://fake/v1");
    expect(JSON.stringify(o.modelKwargs)).not.toContain("CNY");
  });

  it("applies thinking when enabled", async () => {
    const m = await createChatModel("openai", { appConfig: config, thinkingEnabled: true });
    expect((m as unknown as { modelKwargs: unknown }).modelKwargs).toEqual({ thinking: { type: "enabled" } });
  });

  it("fails naming an unknown model", async () => {
    await expect(createChatModel("ghost-model", { appConfig: config })).rejects.toThrow(NotFoundError);
    await expect(createChatModel("ghost-model", { appConfig: config })).rejects.toThrow("ghost-model");
  });

  it("fails clearly when no model is configured", async () => {
    await expect(createChatModel(null, { appConfig: parseAppConfig({}) })).rejects.toThrow("No chat models are configured");
  });

  it("fails naming the missing export for a bad use: path", async () => {
    await expect(createChatModel("ghost-class", { appConfig: config })).rejects.toThrow("does not define a NoSuchModel");
  });
});
