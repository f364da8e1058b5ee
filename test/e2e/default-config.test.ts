import { readFileSync } from "node:fs";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// The shipped config/config.yaml, served offline: the scripted model is listed first.
let h: Harness;
const saved = { key: process.env.OPENAI_API_KEY, base: process.env.OPENAI_BASE_URL };

beforeAll(async () => {
  // What `npm start` provides when the variables are unset.
  process.env.OPENAI_API_KEY = "";
  process.env.OPENAI_BASE_URL = "https://api.openai.com/v1";
  const shipped = readFileSync(new URL("../../config/config.yaml", import.meta.url), "utf8").replace("token_delay_ms: 30", "token_delay_ms: 0");
  h = await startHarness(shipped);
});
afterAll(async () => {
  await h.close();
  if (saved.key === undefined) delete process.env.OPENAI_API_KEY;
  else process.env.OPENAI_API_KEY = saved.key;
  if (saved.base === undefined) delete process.env.OPENAI_BASE_URL;
  else process.env.OPENAI_BASE_URL = saved.base;
});

const human = (content: string) => ({ messages: [{ role: "user", content }] });

describe("the shipped default config", () => {
  it("serves a streamed run with the offline scripted model, token by token", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { input: human("hello gateway"), stream_mode: ["messages-tuple", "values"] });
    const { frames } = parseSse(await res.text());
    const tokens = frames.filter((f) => f.event === "messages").map((f) => f.data[0].content);
    expect(tokens).toEqual(["You ", "said: ", "hello ", "gateway"]);
    const last = frames.filter((f) => f.event === "values").at(-1)!.data.messages.at(-1);
    expect(last).toMatchObject({ type: "ai", content: "You said: hello gateway" });
    expect(frames.at(-1)!.event).toBe("end");
  });

  it("lists its models without keys or base URLs", async () => {
    const res = await fetch(`${h.url}/api/models`);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.models[0].name).toBe("scripted");
    for (const m of body.models) expect(Object.keys(m).sort()).toEqual(["description", "display_name", "model", "name", "supports_reasoning_effort", "supports_thinking"]);
    expect(typeof body.token_usage.enabled).toBe("boolean");
    expect(text).not.toContain("api.openai.com");
    expect(text).not.toContain("api_key");
    expect((await fetch(`${h.url}/api/models/nope`)).status).toBe(404);
    expect(await (await fetch(`${h.url}/api/models/nope`)).json()).toEqual({ detail: "Model 'nope' not found" });
    expect((await (await fetch(`${h.url}/api/models/scripted`)).json()).model).toBe("scripted-echo");
  });

  it("asks a clarification question when the scripted model calls ask_clarification, and ends the turn there", async () => {
    const c = new Client({ apiUrl: h.url, apiKey: null, callerOptions: { maxRetries: 0 } });
    const thread = await c.threads.create();
    const parts: any[] = [];
    for await (const p of c.runs.stream(thread.thread_id, "lead_agent", {
      input: human('!call ask_clarification {"question": "Which city?", "options": ["Paris", "Rome"]}'),
      streamMode: ["values"],
    })) parts.push(p);
    const messages = parts.filter((p) => p.event === "values").at(-1).data.messages;
    expect(messages.map((m: any) => m.type)).toEqual(["human", "ai", "tool"]);
    expect(messages[2]).toMatchObject({ name: "ask_clarification", content: "❓ Which city?\n  1. Paris\n  2. Rome" });
    expect(messages[2].artifact.human_input).toMatchObject({ kind: "human_input_request", question: "Which city?" });
  });

  it("streams a scripted model failure as an error frame", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { input: human("!fail boom") });
    const { frames } = parseSse(await res.text());
    const events = frames.map((f) => f.event);
    expect(events[0]).toBe("metadata");
    expect(events.slice(-2)).toEqual(["error", "end"]);
    expect(new Set(events.slice(1, -2))).toEqual(new Set(["values"]));
    expect(frames.at(-2)!.data).toEqual({ message: "boom", name: "Error", error: "Error" });
  });

  it("answers health with the service name", async () => {
    const body = await (await fetch(`${h.url}/health`)).json();
    expect(body).toMatchObject({ status: "healthy", service: "deer-flow-gateway", sandbox: expect.stringMatching(/^(local|bubblewrap)$/) });
    // The bubblewrap provider (where bwrap works) also says what enforces its process limit.
    expect(Object.keys(body).sort()).toEqual(body.sandbox === "bubblewrap" ? ["sandbox", "sandbox_process_limit", "service", "status"] : ["sandbox", "service", "status"]);
  });
});

describe("bad input", () => {
  it("answers malformed JSON with 422 json_invalid and keeps serving", async () => {
    const res = await fetch(`${h.url}/runs/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"input":' });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.detail[0].type).toBe("json_invalid");
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
  });

  it("rejects a body that fails the schema with 422 and a detail list, creating no run", async () => {
    const thread = await (await postJson(`${h.url}/threads`, { thread_id: "bad-input" })).json();
    for (const body of [[], { foo: 1 }, { stream_mode: ["events", "tools", "events"] }, { webhook: "https://x" }, { multitask_strategy: "bogus" }, { input: { messages: "hi" } }]) {
      const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Array.isArray((await res.json()).detail)).toBe(true);
    }
    const modes = await (await postJson(`${h.url}/threads/bad-input/runs/stream`, { stream_mode: ["events", "tools", "events"] })).json();
    expect(modes.detail[0].type).toBe("unsupported_stream_mode");
    expect(modes.detail[0].msg).toContain("events, tools");
    const webhook = await (await postJson(`${h.url}/threads/bad-input/runs/stream`, { webhook: "https://x" })).json();
    expect(webhook.detail[0]).toMatchObject({ type: "unsupported_run_option", loc: ["body", "webhook"], msg: "Run option 'webhook' is not supported by DeerFlow" });
    expect(await (await fetch(`${h.url}/threads/bad-input/runs`)).json()).toEqual([]);
  });

  it("answers an unknown thread with 404 {detail} and a bad thread id with 422", async () => {
    const res = await postJson(`${h.url}/threads/never-made/runs/stream`, { input: human("x") });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "Thread never-made not found" });
    expect((await fetch(`${h.url}/threads/7d0c1f9e-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await fetch(`${h.url}/threads/bad.id/state`)).status).toBe(422);
    expect((await postJson(`${h.url}/threads`, { thread_id: "bad.id" })).status).toBe(422);
    for (const thread_id of ["../escape", "", "x".repeat(65), 123]) {
      const r = await postJson(`${h.url}/runs/stream`, { config: { configurable: { thread_id } } });
      expect(r.status, String(thread_id)).toBe(422);
    }
  });

  it("rejects a malformed message with 400 naming its index", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { input: { messages: [{ role: "user", content: "ok" }, { role: "bogus", content: "x" }] } });
    expect(res.status).toBe(400);
    expect((await res.json()).detail).toMatch(/^Invalid message at input\.messages\[1\]/);
  });

  it("rejects an invalid agent name with 422 before any run starts", async () => {
    for (const body of [{ assistant_id: "Bad Name!" }, { assistant_id: "../etc" }, { context: { agent_name: "../etc" } }]) {
      const res = await postJson(`${h.url}/runs/stream`, { ...body, input: human("x") });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((await res.json()).detail).toMatch(/A-Za-z0-9-/);
    }
  });

  it("reports an unknown custom agent as an error frame inside the run", async () => {
    const res = await postJson(`${h.url}/runs/stream`, { assistant_id: "ghost-agent", input: human("x") });
    expect(res.status).toBe(200);
    const { frames } = parseSse(await res.text());
    expect(frames.map((f) => f.event)).toEqual(["metadata", "error", "end"]);
    expect(frames[1].data.message).toContain("ghost-agent");
  });

  it("answers unknown routes with a JSON 404", async () => {
    const res = await fetch(`${h.url}/nope`);
    expect(res.status).toBe(404);
    expect((await res.json()).detail).toContain("/nope");
  });
});

describe("hostile input", () => {
  it("rejects a message whose content is not text or content blocks with 400, and the thread stays usable", async () => {
    const thread = await (await postJson(`${h.url}/threads`, {})).json();
    for (const content of [5, true, { a: 1 }, [null], undefined]) {
      const res = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: { messages: [{ role: "user", content }] } });
      expect(res.status, JSON.stringify(content)).toBe(400);
      expect((await res.json()).detail).toMatch(/^Invalid message at input\.messages\[0\]: content/);
    }
    const ok = await postJson(`${h.url}/threads/${thread.thread_id}/runs/stream`, { input: human("fine") });
    expect(await ok.text()).toContain("You said: fine");
  });

  it("answers overlong agent names with 422 and no host paths", async () => {
    const long = "a".repeat(300);
    const res = await postJson(`${h.url}/runs/stream`, { assistant_id: long, input: human("x") });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).toContain("at most 128 characters");
    expect(text).not.toContain(h.dir);
  });

  it("answers malformed URLs, long path params and bare preflights with JSON", async () => {
    const bad = await fetch(`${h.url}/threads/%zz`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).detail).toBeTruthy();
    const long = await fetch(`${h.url}/threads/${"a".repeat(300)}`);
    expect(long.status).toBe(422);
    expect((await long.json()).detail).toContain("Invalid thread_id");
    const preflight = await fetch(`${h.url}/runs/stream`, { method: "OPTIONS" });
    expect(preflight.status).toBeLessThan(400);
  });

  it("answers the runs of an unknown thread with 404", async () => {
    expect((await fetch(`${h.url}/threads/never-made-2/runs`)).status).toBe(404);
  });
});
