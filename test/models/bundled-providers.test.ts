import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicFake } from "../support/fakes/anthropic.js";
import type { ChatFake } from "../support/fakes/chat-reply.js";
import { startGeminiFake } from "../support/fakes/gemini.js";
import { startOllamaFake } from "../support/fakes/ollama.js";
import type { FakeRequest } from "../support/fakes/http-fake.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 49 item 3: the bundled LangChain providers (DeerFlow's `langchain_anthropic:ChatAnthropic`,
// `langchain_google_genai:ChatGoogleGenerativeAI`, `langchain_ollama:ChatOllama` entries) against local fakes of
// their HTTP APIs, through the gateway over HTTP: streamed tokens, token usage, thinking on/off, reasoning effort,
// a tool call and its result, and an image the model looks at (vision).

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** What each provider's request looks like, read back from the fake. */
interface Provider {
  label: string;
  start(): Promise<ChatFake>;
  /** The model entry's provider lines (under `- name: m`). */
  entry(url: string): string;
  /** The thinking switch as sent. */
  thinking(body: any): unknown;
  thinkingOn: unknown;
  thinkingOff: unknown;
  /** The reasoning effort as sent, for effort `high`. */
  effort(body: any): unknown;
  effortHigh: unknown;
  /** The text of the tool result sent back to the model, or undefined. */
  toolResult(body: any): string | undefined;
  /** The base64 data of every image sent to the model. */
  images(body: any): string[];
  /** Output tokens the gateway reports for the fakes' 7. */
  outputTokens: number;
}

const blocksOf = (body: any, key: string) => (body[key] ?? []).flatMap((m: any) => (Array.isArray(m.content) ? m.content : m.parts ?? []));

const PROVIDERS: Provider[] = [
  {
    label: "Anthropic (langchain_anthropic:ChatAnthropic)",
    start: () => startAnthropicFake("sk-ant-fake"),
    entry: (url) => `use: langchain_anthropic:ChatAnthropic
    model: claude-sonnet-4-20250514
    api_key: sk-ant-fake
    base_url: ${url}
    default_request_timeout: 30
    max_tokens: 16000
    supports_reasoning_effort: true
    when_thinking_enabled:
      thinking: { type: enabled, budget_tokens: 4096 }
    when_thinking_disabled:
      thinking: { type: disabled }`,
    thinking: (body) => body.thinking,
    thinkingOn: { type: "enabled", budget_tokens: 4096 },
    thinkingOff: { type: "disabled" },
    effort: (body) => body.output_config?.effort,
    effortHigh: "high",
    toolResult: (body) => {
      const block = blocksOf(body, "messages").find((b: any) => b.type === "tool_result");
      return block ? (typeof block.content === "string" ? block.content : block.content.map((c: any) => c.text).join("")) : undefined;
    },
    images: (body) => blocksOf(body, "messages").filter((b: any) => b.type === "image").map((b: any) => b.source.data),
    // @langchain/anthropic adds message_start's output_tokens (1, as the API documents) to message_delta's
    // cumulative count (7): the library's arithmetic, kept as it is.
    outputTokens: 8,
  },
  {
    label: "Gemini (langchain_google_genai:ChatGoogleGenerativeAI)",
    start: () => startGeminiFake("gemini-fake-key"),
    entry: (url) => `use: langchain_google_genai:ChatGoogleGenerativeAI
    model: gemini-2.5-pro
    gemini_api_key: gemini-fake-key
    base_url: ${url}
    timeout: 600.0
    max_tokens: 8192
    supports_reasoning_effort: true
    when_thinking_enabled: { thinking: { type: enabled, budget_tokens: 1024 } }`,
    thinking: (body) => body.generationConfig?.thinkingConfig,
    thinkingOn: { includeThoughts: true, thinkingBudget: 1024 },
    thinkingOff: { thinkingBudget: 0 },
    effort: (body) => body.generationConfig?.thinkingConfig?.thinkingLevel,
    effortHigh: "HIGH",
    toolResult: (body) => {
      const part = blocksOf(body, "contents").find((p: any) => p.functionResponse);
      return part ? JSON.stringify(part.functionResponse.response) : undefined;
    },
    images: (body) => blocksOf(body, "contents").filter((p: any) => p.inlineData).map((p: any) => p.inlineData.data),
    outputTokens: 7,
  },
  {
    label: "Ollama (langchain_ollama:ChatOllama)",
    start: () => startOllamaFake(),
    entry: (url) => `use: langchain_ollama:ChatOllama
    model: qwen3:32b
    base_url: ${url}
    num_predict: 8192
    supports_reasoning_effort: true
    when_thinking_enabled: { reasoning: true }
    when_thinking_disabled: { reasoning: false }`,
    thinking: (body) => body.think,
    thinkingOn: true,
    thinkingOff: false,
    effort: (body) => body.think,
    effortHigh: "high",
    toolResult: (body) => body.messages.find((m: any) => m.role === "tool")?.content,
    images: (body) => body.messages.flatMap((m: any) => m.images ?? []),
    outputTokens: 7,
  },
];

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((b: any) => (b.type === "text" ? b.text : "")).join("") : "";

describe.each(PROVIDERS)("$label", (p) => {
  let fake: ChatFake;
  let h: Harness;
  beforeAll(async () => {
    fake = await p.start();
    h = await startHarness(`models:
  - name: m
    supports_thinking: true
    supports_vision: true
    ${p.entry(fake.url)}
tool_groups:
  - name: file:write
tools:
  - name: write_file
    group: file:write
    use: deerflow.sandbox.tools:write_file_tool
`);
  });
  afterEach(() => fake.reset());
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  const thread = async (): Promise<string> => (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
  async function run(threadId: string, text: string, context: Record<string, unknown> = {}) {
    const res = await postJson(`${h.url}/threads/${threadId}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["messages-tuple", "values"], context });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text()).frames;
    expect(frames.filter((f) => f.event === "error").map((f) => f.data)).toEqual([]);
    const state = frames.filter((f) => f.event === "values").at(-1)!.data as { messages: any[] };
    return { frames, messages: state.messages, last: state.messages.at(-1) };
  }
  const chatRequests = (): FakeRequest[] => fake.requests.filter((r) => r.method === "POST");

  it("streams the reply token by token and reports the provider's token usage", async () => {
    fake.respond = () => ({ text: "Hello from the fake provider" });
    const { frames, last } = await run(await thread(), "hi");
    const tokens = frames.filter((f) => f.event === "messages").map((f) => textOf((f.data as any[])[0].content)).filter(Boolean);
    expect(tokens.length).toBeGreaterThanOrEqual(5);
    expect(tokens.join("")).toBe("Hello from the fake provider");
    expect(textOf(last.content)).toBe("Hello from the fake provider");
    expect(last.usage_metadata).toMatchObject({ input_tokens: 11, output_tokens: p.outputTokens, total_tokens: 11 + p.outputTokens });
  });

  it("switches thinking on and off per run, and the reasoning reaches the message", async () => {
    fake.respond = () => ({ thinking: "Let me weigh this.", text: "Forty-two." });
    const on = await run(await thread(), "think", { thinking_enabled: true });
    expect(p.thinking(chatRequests().at(-1)!.body)).toEqual(p.thinkingOn);
    const reasoning = on.last.additional_kwargs?.reasoning_content ?? (on.last.content as any[]).filter((b) => b.type === "thinking").map((b) => b.thinking).join("");
    expect(reasoning).toBe("Let me weigh this.");
    expect(textOf(on.last.content)).toBe("Forty-two.");
    fake.respond = () => ({ text: "Quick." });
    await run(await thread(), "fast", { thinking_enabled: false });
    expect(p.thinking(chatRequests().at(-1)!.body)).toEqual(p.thinkingOff);
  });

  it("sends the requested reasoning effort", async () => {
    await run(await thread(), "hard one", { thinking_enabled: true, reasoning_effort: "high" });
    expect(p.effort(chatRequests().at(-1)!.body)).toEqual(p.effortHigh);
  });

  it("calls a tool and answers from its result", async () => {
    fake.respond = (req) =>
      p.toolResult(req.body) === undefined ? { toolCalls: [{ name: "write_file", args: { path: "/mnt/user-data/outputs/note.txt", content: "noted" } }] } : { text: "Wrote the note." };
    const { messages, last } = await run(await thread(), "write a note");
    const tool = messages.find((m) => m.type === "tool");
    expect(tool).toMatchObject({ name: "write_file", status: "success" });
    expect(p.toolResult(chatRequests().at(-1)!.body)).toContain(textOf(tool.content));
    expect(textOf(last.content)).toBe("Wrote the note.");
    expect(chatRequests()).toHaveLength(2);
  });

  it("shows the model an uploaded image it asks to view (vision)", async () => {
    const t = await thread();
    expect((await uploadFiles(h.url, t, [["dot.png", Buffer.from(PNG, "base64"), "image/png"]])).status).toBe(200);
    fake.respond = (req) => (p.toolResult(req.body) === undefined ? { toolCalls: [{ name: "view_image", args: { image_path: "/mnt/user-data/uploads/dot.png" } }] } : { text: "A single pixel." });
    const { last } = await run(t, "what is in dot.png?");
    expect(textOf(last.content)).toBe("A single pixel.");
    expect(p.images(chatRequests()[0].body)).toEqual([]);
    expect(p.images(chatRequests().at(-1)!.body)).toEqual([PNG]);
  });
});
