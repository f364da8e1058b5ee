import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeLeadAgent } from "../../src/agents/lead-agent/agent.js";
import { buildCacheSize, clearBuildCache } from "../../src/agents/lead-agent/build-cache.js";
import { parseAppConfig } from "../../src/config/schema.js";
import { signUp, type Session } from "../support/auth-client.js";
import { echoReply, useFakeOpenAI, systemText } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";

// One compiled graph serves every run whose build resolves to the same inputs (the compile is the costly part of a
// build); each run gets its own copy. What a user must never notice: an edit that does not reach the next run,
// one run's state or checkpoints in another, or one user's agent in another user's run.
const ENV_KEYS = ["DEER_FLOW_SKILLS_DIR", "DEER_FLOW_EXTENSIONS_CONFIG_PATH"] as const;
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
const work = mkdtempSync(path.join(tmpdir(), "shared-build-"));
const PASSWORD = "correct-horse-battery";
const fake = useFakeOpenAI();

const config = (url: string, modelId = "gpt-a") => `models:
  - name: fake-gpt
    use: langchain_openai:ChatOpenAI
    model: ${modelId}
    api_key: sk-test
    base_url: ${url}
    max_retries: 0
title:
  enabled: false
agents_api:
  enabled: true
`;

beforeAll(async () => {
  for (const s of ["bootstrap", "data-analysis"]) cpSync(path.resolve("test/fixtures/deerflow/skills", s), path.join(work, "skills", "public", s), { recursive: true });
  writeFileSync(path.join(work, "extensions_config.json"), JSON.stringify({ mcpServers: {}, skills: {} }));
  process.env.DEER_FLOW_SKILLS_DIR = path.join(work, "skills");
  process.env.DEER_FLOW_EXTENSIONS_CONFIG_PATH = path.join(work, "extensions_config.json");
});
afterAll(async () => {
  for (const k of ENV_KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  rmSync(work, { recursive: true, force: true });
});
beforeEach(() => clearBuildCache());

/** Streams one run on a new thread of `h` (as `session` when given); returns the final values and the thread id. */
async function run(h: Harness, text: string, context: Record<string, unknown> = {}, session?: Session) {
  const body = { input: { messages: [{ role: "user", content: text }] }, stream_mode: ["values"], context };
  const create = session ? await session.fetch("/threads", { json: {} }) : await postJson(`${h.url}/threads`, {});
  const threadId = (await create.json()).thread_id as string;
  const res = session ? await session.fetch(`/threads/${threadId}/runs/stream`, { json: body }) : await postJson(`${h.url}/threads/${threadId}/runs/stream`, body);
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text()).frames;
  expect(frames.find((f) => f.event === "error")).toBeUndefined();
  return { threadId, values: frames.filter((f) => f.event === "values").at(-1)!.data };
}

describe("one compiled graph per distinct build", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(config(fake.url));
  });
  afterAll(async () => h.close());

  it("serves repeated runs with the same inputs from one graph, and a different option from another", async () => {
    await run(h, "one");
    await run(h, "two");
    expect(buildCacheSize()).toBe(1);
    await run(h, "three", { is_plan_mode: true });
    expect(buildCacheSize()).toBe(2);
    expect(fake.requests.map((r) => r.body.messages.at(-1).content)).toEqual(["one", "two", "three"]);
  });

  it("does not keep a build whose options are huge (a 300 KB reasoning_effort): it runs, compiled for itself", async () => {
    await run(h, "small");
    expect(buildCacheSize()).toBe(1);
    const { values } = await run(h, "huge", { reasoning_effort: "x".repeat(300 * 1024) });
    expect(values.messages.at(-1).content).toBe("Echo: huge");
    expect(buildCacheSize()).toBe(1);
  });

  it("gives each request its own copy: the checkpointer set on one is not the other's", async () => {
    const appConfig = parseAppConfig({ models: [{ name: "m", use: "deerflow-gateway:ScriptedChatModel", model: "m" }] });
    const cfg = { context: { thread_id: "t", user_id: "u", app_config: appConfig } };
    const [a, b] = [await makeLeadAgent(cfg), await makeLeadAgent(cfg)];
    expect(a).not.toBe(b);
    expect(a.nodes).toBe(b.nodes);
    a.checkpointer = new MemorySaver();
    expect(b.checkpointer).toBeUndefined();
    expect(a.resolved).not.toBe(b.resolved);
  });

  it("keeps concurrent runs on one graph apart: each thread holds only its own messages", async () => {
    fake.respond = (body) => ({ ...echoReply(body), delayMs: 30 });
    const texts = Array.from({ length: 8 }, (_, i) => `parallel ${i}`);
    const runs = await Promise.all(texts.map((t) => run(h, t)));
    expect(buildCacheSize()).toBe(1);
    for (const [i, { threadId, values }] of runs.entries()) {
      expect(values.messages.map((m: any) => m.content)).toEqual([texts[i], `Echo: ${texts[i]}`]);
      const state = await (await fetch(`${h.url}/threads/${threadId}/state`)).json();
      expect(state.values.messages.map((m: any) => m.content)).toEqual([texts[i], `Echo: ${texts[i]}`]);
    }
  });

  it("sends the next run a config.yaml edit (a new model id)", async () => {
    await run(h, "before");
    h.writeConfig(config(fake.url, "gpt-b"));
    await run(h, "after");
    expect(fake.requests.map((r) => r.body.model)).toEqual(["gpt-a", "gpt-b"]);
    h.writeConfig(config(fake.url));
  });

  it("sends the next run an agent's SOUL.md, whether edited through the API or on disk", async () => {
    expect((await postJson(`${h.url}/api/agents`, { name: "poet", description: "rhymes", soul: "SOUL ONE" })).status).toBe(201);
    await run(h, "a", { agent_name: "poet" });
    const put = await fetch(`${h.url}/api/agents/poet`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ soul: "SOUL TWO" }) });
    expect(put.status).toBe(200);
    await run(h, "b", { agent_name: "poet" });
    writeFileSync(path.join(h.dir, "agents", "default", "poet", "SOUL.md"), "SOUL THREE");
    await run(h, "c", { agent_name: "poet" });
    const souls = fake.requests.map((r) => /<soul>\n(.*)\n<\/soul>/.exec(systemText(r.body))?.[1]);
    expect(souls).toEqual(["SOUL ONE", "SOUL TWO", "SOUL THREE"]);
  });

  it("drops a skill disabled through the skills API from the next run's prompt, and brings it back", async () => {
    await run(h, "a");
    expect((await fetch(`${h.url}/api/skills/data-analysis`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ enabled: false }) })).status).toBe(200);
    await run(h, "b");
    expect((await fetch(`${h.url}/api/skills/data-analysis`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ enabled: true }) })).status).toBe(200);
    await run(h, "c");
    const listed = fake.requests.map((r) => systemText(r.body).split("<disabled_skills>")[0].includes("<name>data-analysis</name>"));
    expect(listed).toEqual([true, false, true]);
  });
});

describe("users never share a graph", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(config(fake.url), { authDisabled: false });
  });
  afterAll(async () => h.close());

  it("builds one graph per user for identical inputs, and each user's same-named agent answers with its own SOUL", async () => {
    const alice = await signUp(h.url, "alice@example.com", PASSWORD, "initialize");
    const bob = await signUp(h.url, "bob@example.com", PASSWORD);
    await run(h, "hi", {}, alice);
    await run(h, "hi", {}, bob);
    expect(buildCacheSize()).toBe(2);
    for (const [who, session] of [["ALICE", alice], ["BOB", bob]] as const) {
      expect((await session.fetch("/api/agents", { json: { name: "helper", description: "mine", soul: `${who} SOUL` } })).status).toBe(201);
    }
    fake.reset();
    fake.respond = (body) => ({ ...echoReply(body), delayMs: 20 });
    await Promise.all([run(h, "from alice", { agent_name: "helper" }, alice), run(h, "from bob", { agent_name: "helper" }, bob)]);
    const soulOf = (text: string) => /<soul>\n(.*)\n<\/soul>/.exec(systemText(fake.requests.find((r) => r.body.messages.at(-1).content === text)!.body))?.[1];
    expect(soulOf("from alice")).toBe("ALICE SOUL");
    expect(soulOf("from bob")).toBe("BOB SOUL");
  });
});
