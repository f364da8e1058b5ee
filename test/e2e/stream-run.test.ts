import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI, systemText } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

const fake = useFakeOpenAI();
let h: Harness;

const configFor = (url: string, first = "fake-gpt") => {
  const models = {
    "fake-gpt": `  - name: fake-gpt\n    use: langchain_openai:ChatOpenAI\n    model: gpt-test\n    api_key: sk-test\n    base_url: ${url}\n`,
    "fake-b": `  - name: fake-b\n    use: langchain_openai:ChatOpenAI\n    model: model-b\n    api_key: sk-test\n    base_url: ${url}\n`,
    "fake-think": `  - name: fake-think\n    use: langchain_openai:ChatOpenAI\n    model: think-test\n    api_key: sk-test\n    base_url: ${url}\n    supports_thinking: true\n    when_thinking_enabled:\n      extra_body:\n        thinking:\n          type: enabled\n`,
    scripted: `  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted-echo\n`,
  } as Record<string, string>;
  const order = [first, ...Object.keys(models).filter((k) => k !== first)];
  return `models:\n${order.map((k) => models[k]).join("")}`;
};

beforeAll(async () => {
  h = await startHarness(configFor(fake.url));
});
afterAll(async () => {
  await h.close();
});

const client = () => new Client({ apiUrl: h.url, apiKey: null, callerOptions: { maxRetries: 0 } });
const human = (content: string) => ({ messages: [{ type: "human", content }] });

describe("a streamed run through the official LangGraph SDK client", () => {
  it("answers with the OpenAI-compatible model and streams metadata, message tuples, values and end", async () => {
    const c = client();
    const thread = await c.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts: { event: string; data: any }[] = [];
    for await (const part of c.runs.stream(thread.thread_id, "lead_agent", {
      input: human("hi there"),
      streamMode: ["values", "messages-tuple"],
      onRunCreated: (meta) => (created = meta),
    })) parts.push(part as never);

    expect(parts[0].event).toBe("metadata");
    expect(parts[0].data.run_id).toBe(created?.run_id);
    expect(created?.thread_id).toBe(thread.thread_id);
    expect(parts.at(-1)?.event).toBe("end");
    expect(parts.some((p) => p.event === "error")).toBe(false);

    const tuples = parts.filter((p) => p.event === "messages");
    expect(tuples.length).toBeGreaterThan(1);
    for (const t of tuples) {
      expect(Array.isArray(t.data) && t.data.length === 2).toBe(true);
      expect(typeof t.data[0].type).toBe("string");
      expect(t.data[0].id).toBeTruthy();
      expect(t.data[0]).not.toHaveProperty("lc");
    }
    const aiChunks = tuples.filter((t) => t.data[0].type === "ai" || t.data[0].type === "AIMessageChunk");
    expect(new Set(aiChunks.map((t) => t.data[0].id)).size).toBe(1);
    expect(aiChunks.map((t) => t.data[0].content).join("")).toBe("Echo: hi there");

    const lastValues = parts.filter((p) => p.event === "values").at(-1)!.data;
    const last = lastValues.messages.at(-1);
    expect(last).toMatchObject({ type: "ai", content: "Echo: hi there" });
    expect(last).not.toHaveProperty("kwargs");

    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body.model).toBe("gpt-test");
    expect(fake.requests[0].body.stream).toBe(true);
    expect(fake.requests[0].headers.authorization).toBe("Bearer sk-test");
    expect(fake.requests[0].body.messages[0].role).toBe("system");
    expect(fake.requests[0].body.tools.map((t: any) => t.function.name)).toContain("ask_clarification");

    const run = await c.runs.get(thread.thread_id, created!.run_id);
    expect(run.status).toBe("success");
    const state = await c.threads.getState<{ messages: any[] }>(thread.thread_id);
    expect(state.values.messages.map((m: any) => m.type)).toEqual(["human", "ai"]);
  });

  it("works the same under the /api mount, as the DeerFlow frontend calls it", async () => {
    const c = new Client({ apiUrl: `${h.url}/api`, apiKey: null, callerOptions: { maxRetries: 0 } });
    const thread = await c.threads.create({ threadId: "api-mount-thread" });
    expect(thread.thread_id).toBe("api-mount-thread");
    const events: string[] = [];
    for await (const part of c.runs.stream(thread.thread_id, "lead_agent", { input: human("via api"), streamMode: "values" })) events.push(part.event);
    expect(events[0]).toBe("metadata");
    expect(events.at(-1)).toBe("end");
    expect(events.filter((e) => e === "values").length).toBeGreaterThan(0);
  });

  it("sends thinking {type: disabled} to a thinking model when the request turns thinking off, and enabled when on", async () => {
    const c = client();
    const thread = await c.threads.create();
    for await (const _ of c.runs.stream(thread.thread_id, "lead_agent", { input: human("off"), context: { model_name: "fake-think", thinking_enabled: false } }));
    expect(fake.requests.at(-1)!.body.model).toBe("think-test");
    expect(fake.requests.at(-1)!.body.thinking).toEqual({ type: "disabled" });
    for await (const _ of c.runs.stream(thread.thread_id, "lead_agent", { input: human("on"), context: { model_name: "fake-think", thinking_enabled: true } }));
    expect(fake.requests.at(-1)!.body.thinking).toEqual({ type: "enabled" });
  });
});

describe("the raw SSE wire format", () => {
  it("frames every event with a strictly increasing id, ends with `end` (data null, no id) and names the run in Content-Location", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { input: human("raw"), stream_mode: ["values", "messages-tuple", "updates"] });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const location = res.headers.get("content-location")!;
    expect(location).toMatch(/^\/threads\/[0-9a-f-]{36}\/runs\/[0-9a-f-]{36}$/);
    const { frames } = parseSse(await res.text());
    expect(frames[0].event).toBe("metadata");
    expect(frames[0].data.run_id).toBe(location.split("/").at(-1));
    expect(frames[0].data.thread_id).toBe(location.split("/")[2]);
    expect(frames.at(-1)).toEqual({ event: "end", data: null });
    const seqs = frames.filter((f) => f.event !== "end").map((f) => Number(f.id!.split("-")[1]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(frames.some((f) => f.event === "messages-tuple")).toBe(false);
    expect(frames.some((f) => f.event === "updates" && "model_request" in f.data)).toBe(true);
    const values = frames.filter((f) => f.event === "values").at(-1)!.data;
    for (const m of values.messages) {
      expect(typeof m.type).toBe("string");
      expect(typeof m.id).toBe("string");
      expect(m).not.toHaveProperty("lc");
    }
  });

  it("treats a missing, null or duplicated stream_mode as values only", async () => {
    for (const stream_mode of [undefined, null, "values", [], ["values", "values"]]) {
      const res = await postJson(`${h.url}/runs/stream`, { input: human("modes"), stream_mode });
      const { frames } = parseSse(await res.text());
      expect(new Set(frames.map((f) => f.event))).toEqual(new Set(["metadata", "values", "end"]));
    }
  });

  it("tells the user about a provider failure in the answer, with no stack trace, and the run succeeds (upstream's LLM error handling)", async () => {
    fake.respond = () => ({ status: 400 });
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: human("boom"), stream_mode: ["values"] });
    const { frames } = parseSse(await res.text());
    expect(frames.some((f) => f.event === "error")).toBe(false);
    const last = frames.filter((f) => f.event === "values").at(-1)!.data.messages.at(-1);
    expect(last.type).toBe("ai");
    expect(last.additional_kwargs.deerflow_error_fallback).toBe(true);
    expect(typeof last.content).toBe("string");
    expect(last.content).not.toMatch(/\n\s+at |node_modules|\/work\//);
    const runId = frames[0].data.run_id;
    expect((await (await fetch(`${h.url}/threads/${thread.thread_id}/runs/${runId}`)).json()).status).toBe("success");
  });
});

describe("model selection", () => {
  it("falls back to models[0] when the requested model is unknown, and records the model used in the run metadata", async () => {
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: human("x"), context: { model_name: "no-such-model" } });
    const { frames } = parseSse(await res.text());
    expect(frames.some((f) => f.event === "error")).toBe(false);
    expect(fake.requests.map((r) => r.body.model)).toEqual(["gpt-test"]);
    const run = await (await fetch(`${h.url}/threads/${thread.thread_id}/runs/${frames[0].data.run_id}`)).json();
    expect(run.metadata.model_name).toBe("fake-gpt");
  });

  it("serves the next run with the new default model after config.yaml is edited, without a restart", async () => {
    h.writeConfig(configFor(fake.url, "fake-b"));
    const res = await postJson(`${h.url}/runs/stream`, { input: human("after edit") });
    await res.text();
    expect(fake.requests.at(-1)!.body.model).toBe("model-b");
    const models = await (await fetch(`${h.url}/api/models`)).json();
    expect(models.models[0].name).toBe("fake-b");
    h.writeConfig(configFor(fake.url));
    await (await postJson(`${h.url}/runs/stream`, { input: human("back") })).text();
    expect(fake.requests.at(-1)!.body.model).toBe("gpt-test");
  });
});

describe("custom agents", () => {
  it("builds a custom agent from agents/<user>/<name>: its SOUL.md reaches the system prompt and its model and settings apply", async () => {
    const { mkdirSync, writeFileSync } = await import("node:fs");
    const dir = `${process.env.DEER_FLOW_AGENTS_DIR}/default/research-bot`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/config.yaml`, "name: research-bot\ndescription: test agent\nmodel: fake-b\nmodel_settings:\n  temperature: 0.2\n");
    writeFileSync(`${dir}/SOUL.md`, "Be brief & <precise>.\n");
    const c = client();
    const thread = await c.threads.create();
    const parts: any[] = [];
    for await (const p of c.runs.stream(thread.thread_id, "Research_Bot", { input: human("who are you") })) parts.push(p);
    expect(parts.some((p) => p.event === "error")).toBe(false);
    const body = fake.requests.at(-1)!.body;
    expect(body.model).toBe("model-b");
    expect(body.temperature).toBe(0.2);
    const system = systemText(body);
    expect(system).toContain("<soul>\nBe brief &amp; &lt;precise&gt;.\n</soul>");
    expect(system).toContain('You are the custom agent "research-bot"');
    const run = await c.runs.get(thread.thread_id, parts[0].data.run_id);
    expect(run.metadata).toMatchObject({ agent_name: "research-bot", model_name: "fake-b" });
  });

  it("gives the default agent no soul block when no SOUL.md exists", async () => {
    await (await postJson(`${h.url}/runs/stream`, { input: human("plain") })).text();
    const system = systemText(fake.requests.at(-1)!.body);
    expect(system).toContain("You are DeerFlow 2.0");
    expect(system).not.toContain("<soul>\n");
  });
});
