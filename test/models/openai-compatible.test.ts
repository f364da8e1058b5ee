import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// Issue 49 item 3: DeerFlow's patched OpenAI-compatible providers (upstream deerflow/models/patched_*.py,
// vllm_provider.py, mindie_provider.py) by their upstream `use:` paths, against the fake OpenAI server over HTTP:
// each one's request and response adjustments, with plain ChatOpenAI as the control.
const fake = useFakeOpenAI();
let h: Harness;

const entry = (name: string, use: string, extra = "") => `  - name: ${name}
    use: ${use}
    model: ${name}-model
    api_key: sk-test
    base_url: ${fake.url}
    supports_thinking: true${extra}
`;

beforeAll(async () => {
  h = await startHarness(`models:
${entry("plain", "langchain_openai:ChatOpenAI")}${entry("deepseek", "deerflow.models.patched_deepseek:PatchedChatDeepSeek")}${entry("mimo", "deerflow.models.patched_mimo:PatchedChatMiMo")}${entry("stepfun", "deerflow.models.patched_stepfun:PatchedChatStepFun")}${entry("minimax", "deerflow.models.patched_minimax:PatchedChatMiniMax")}${entry("gemini-gw", "deerflow.models.patched_openai:PatchedChatOpenAI")}${entry("vllm", "deerflow.models.vllm_provider:VllmChatModel", `
    when_thinking_enabled:
      extra_body: { chat_template_kwargs: { thinking: true } }`)}${entry("mindie", "deerflow.models.mindie_provider:MindIEChatModel", `
    read_timeout: 900.0
    connect_timeout: 30.0`)}
tool_groups:
  - name: file:write
tools:
  - name: write_file
    group: file:write
    use: deerflow.sandbox.tools:write_file_tool
`);
});
afterAll(async () => h.close());

/** Runs one turn on a new thread with `model`; returns the final state's messages. */
async function run(model: string, text: string, context: Record<string, unknown> = {}, streamMode = ["values"]): Promise<any[]> {
  const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
  const res = await postJson(`${h.url}/threads/${thread}/runs/stream`, { input: { messages: [{ role: "user", content: text }] }, stream_mode: streamMode, context: { model_name: model, ...context } });
  const frames = parseSse(await res.text()).frames;
  expect(frames.filter((f) => f.event === "error").map((f) => f.data)).toEqual([]);
  return (frames.filter((f) => f.event === "values").at(-1)!.data as { messages: any[] }).messages;
}

const WRITE = { name: "write_file", args: { path: "/mnt/user-data/outputs/n.txt", content: "x" } };
/** A tool call first (with `fields` on that assistant message), the answer once the tool result is in. */
const toolTurn = (fields: Record<string, unknown>, extra?: Record<string, unknown>) => (body: Record<string, any>): FakeReply =>
  body.messages.some((m: any) => m.role === "tool" || (m.role === "user" && String(m.content).includes("<tool_response>"))) ? { content: "done" } : { toolCalls: [{ ...WRITE, extra }], fields };
const assistantSent = () => fake.requests.at(-1)!.body.messages.find((m: any) => m.role === "assistant");

describe("reasoning_content replayed on earlier assistant messages", () => {
  it.each(["deepseek", "mimo"])("%s sends the tool-call turn's reasoning_content back; plain ChatOpenAI does not", async (model) => {
    fake.respond = toolTurn({ reasoning_content: "need a file" });
    const messages = await run(model, "write it");
    expect(messages.find((m) => m.type === "ai").additional_kwargs.reasoning_content).toBe("need a file");
    expect(assistantSent().reasoning_content).toBe("need a file");
    fake.respond = toolTurn({ reasoning_content: "need a file" });
    await run("plain", "write it");
    expect(assistantSent()).not.toHaveProperty("reasoning_content");
  });
});

describe("PatchedChatStepFun", () => {
  it("reads StepFun's `reasoning` field as reasoning_content and replays it", async () => {
    fake.respond = toolTurn({ reasoning: "step by step" });
    const messages = await run("stepfun", "write it");
    expect(messages.find((m) => m.type === "ai").additional_kwargs.reasoning_content).toBe("step by step");
    expect(assistantSent().reasoning_content).toBe("step by step");
  });

  it("keeps the reasoning when the run streams tokens (messages-tuple)", async () => {
    fake.respond = () => ({ content: "streamed answer", fields: { reasoning: "streamed reasoning" } });
    const messages = await run("stepfun", "hi", {}, ["messages-tuple", "values"]);
    expect(messages.at(-1)).toMatchObject({ content: "streamed answer", additional_kwargs: { reasoning_content: "streamed reasoning" } });
  });
});

describe("PatchedChatMiniMax", () => {
  it("asks for split reasoning, drops user message names, and maps reasoning_details to reasoning_content", async () => {
    fake.respond = () => ({ content: "hello", fields: { reasoning_details: [{ type: "reasoning.text", text: "minimax thinks" }] } });
    const messages = await run("minimax", "hi");
    const body = fake.requests.at(-1)!.body;
    expect(body.reasoning_split).toBe(true);
    expect(body.messages.filter((m: any) => m.role === "user").every((m: any) => !("name" in m))).toBe(true);
    expect(messages.at(-1).additional_kwargs.reasoning_content).toBe("minimax thinks");
  });
});

describe("PatchedChatOpenAI (Gemini over an OpenAI-compatible gateway)", () => {
  it("echoes each tool call's thought_signature back", async () => {
    fake.respond = toolTurn({}, { thought_signature: "sig-abc" });
    await run("gemini-gw", "write it");
    expect(assistantSent().tool_calls[0].thought_signature).toBe("sig-abc");
    fake.respond = toolTurn({}, { thought_signature: "sig-abc" });
    await run("plain", "write it");
    expect(assistantSent().tool_calls[0]).not.toHaveProperty("thought_signature");
  });
});

describe("VllmChatModel", () => {
  it("sends Qwen's enable_thinking for the legacy `thinking` switch, keeps vLLM's `reasoning` and replays it", async () => {
    fake.respond = toolTurn({ reasoning: "vllm reasons" });
    const messages = await run("vllm", "write it", { thinking_enabled: true });
    expect(fake.requests[0].body.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(messages.find((m) => m.type === "ai").additional_kwargs.reasoning_content).toBe("vllm reasons");
    expect(assistantSent().reasoning).toBe("vllm reasons");
    await run("vllm", "quick", { thinking_enabled: false });
    expect(fake.requests.at(-1)!.body.chat_template_kwargs).toEqual({ enable_thinking: false });
  });
});

describe("MindIEChatModel", () => {
  it("reads XML tool calls, sends tool turns as XML text, and asks without streaming when tools are bound", async () => {
    const xml = "<tool_call> <function=write_file> <parameter=path>/mnt/user-data/outputs/m.txt</parameter> <parameter=content>line1\\nline2</parameter> </function> </tool_call>";
    fake.respond = (body) => (body.messages.some((m: any) => String(m.content).includes("<tool_response>")) ? { content: "Saved.\\nBye" } : { content: xml });
    const messages = await run("mindie", "save it");
    const call = messages.find((m) => m.type === "ai").tool_calls[0];
    expect(call).toMatchObject({ name: "write_file", args: { path: "/mnt/user-data/outputs/m.txt", content: "line1\nline2" } });
    expect(messages.find((m) => m.type === "tool").status).toBe("success");
    expect(messages.at(-1).content).toBe("Saved.\nBye");
    const sent = fake.requests.at(-1)!.body;
    expect(sent.stream).toBeFalsy();
    expect(sent.messages.some((m: any) => m.role === "tool" || m.tool_calls)).toBe(false);
    expect(sent.messages.find((m: any) => m.role === "assistant").content).toContain("<function=write_file>");
    expect(sent.messages.at(-1)).toMatchObject({ role: "user", content: expect.stringContaining("<tool_response>") });
  });
});
