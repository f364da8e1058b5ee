// Issue 14 item 1: memory backends chosen by `memory.manager_class` (noop, a custom `module:Export` class), the
// strict `memory:` config, tool mode, and the offline scripted model's deterministic extraction.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { parseAppConfigText } from "../../src/config/app-config.js";
import { MEMORY_UPDATE_MARKER } from "../../src/agents/memory/extraction.js";
import { ACCEPTED_WITHOUT_EFFECT_KEYS, DeerMemConfigSchema, MEMORY_SHARED_KEYS } from "../../src/agents/memory/memory-config.js";
import { echoReply, useFakeOpenAI, type RecordedRequest } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

const fake = useFakeOpenAI();
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const fakeModel = () => `models:\n  - name: chat\n    use: langchain_openai:ChatOpenAI\n    model: gpt-chat\n    api_key: sk-test\n    base_url: ${fake.url}\n    max_retries: 0\n`;
const scriptedModel = "models:\n  - name: offline\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n";
const textOfMessage = (m: any): string => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b: any) => b.text ?? "").join(""));
const promptOf = (r: RecordedRequest) => r.body.messages.map(textOfMessage).join("\n");
const isExtraction = (r: RecordedRequest) => textOfMessage(r.body.messages?.[0] ?? {}).startsWith(MEMORY_UPDATE_MARKER);

const chat = async (thread: string, content: string) => {
  expect((await postJson(`${h!.url}/threads`, { thread_id: thread, if_exists: "do_nothing" })).status).toBe(200);
  const res = await postJson(`${h!.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content }] } });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
};
const send = async (method: string, url: string, body?: unknown) => {
  const res = await fetch(`${h!.url}${url}`, { method, ...(body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: await res.json() };
};

describe("manager_class: noop", () => {
  it("stores nothing, injects nothing and never calls the model for memory; fact edits are 501", async () => {
    h = await startHarness(`${fakeModel()}memory:\n  manager_class: noop\n`);
    fake.respond = (body) => (isExtraction({ body } as RecordedRequest) ? { content: JSON.stringify({ newFacts: [{ content: "x", confidence: 1, scope: "user", durability: "durable", authority: "descriptive" }] }) } : echoReply(body));
    await chat("t-1", "I prefer tea.");
    await h.app.deerflow.memoryManager.flush();
    await chat("t-2", "What do I prefer?");
    expect(fake.requests.filter(isExtraction)).toEqual([]);
    expect(promptOf(fake.requests.at(-1)!)).not.toContain("<memory>\n");
    expect(existsSync(path.join(process.env.DEER_FLOW_HOME!, "users", "default", "memory"))).toBe(false);
    expect((await send("GET", "/api/memory")).body.facts).toEqual([]);
    const added = await send("POST", "/api/memory/facts", { content: "Prefers tea" });
    expect(added).toEqual({ status: 501, body: { detail: "Operation 'createFact' not supported by memory backend 'noop'" } });
    expect((await send("DELETE", "/api/memory")).status).toBe(200);
    expect((await send("GET", "/api/memory/config")).body).toMatchObject({ manager_class: "noop", backend_config: {} });
  });

  it("refuses tool mode at start-up, since noop cannot search", async () => {
    await expect(startHarness(`${fakeModel()}memory:\n  manager_class: noop\n  mode: tool\n`)).rejects.toThrow("memory.mode 'tool' requires a backend that implements search(), but 'noop' does not");
  });
});

describe("manager_class: a module:Export path", () => {
  it("builds the class with backend_config, hands it every turn and injects its context", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "custom-memory-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const module = path.join(dir, "journal-memory.mjs");
    // A backend that keeps a journal file of the turns it was given and tells the model how many it has seen.
    writeFileSync(module, `
import { appendFileSync, readFileSync, existsSync } from "node:fs";
export class JournalMemory {
  constructor(init) { this.name = "journal"; this.supportsSearch = false; this.file = init.backendConfig.journal; this.greeting = init.backendConfig.greeting; }
  add(threadId, messages, scope) { appendFileSync(this.file, JSON.stringify({ threadId, scope, last: messages.at(-1).content }) + "\\n"); }
  async getContext(scope) {
    const n = existsSync(this.file) ? readFileSync(this.file, "utf8").trim().split("\\n").filter(Boolean).length : 0;
    return n ? this.greeting + " " + scope.userId + "/" + scope.agentName + " has " + n + " remembered turn(s)" : "";
  }
  async flush() {}
  async shutdownFlush() { return true; }
  async forget() {}
}
`);
    const journal = path.join(dir, "journal.jsonl");
    h = await startHarness(`${fakeModel()}memory:\n  manager_class: ${module}:JournalMemory\n  backend_config:\n    journal: ${journal}\n    greeting: Hello from the journal,\n    api_key: sk-custom-secret\n`);
    await chat("t-1", "remember this");
    const entries = readFileSync(journal, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(entries).toEqual([{ threadId: "t-1", scope: { userId: "default", agentName: "default" }, last: "Echo: remember this" }]);
    await chat("t-2", "what do you remember?");
    expect(promptOf(fake.requests.at(-1)!)).toContain("<memory>\nHello from the journal, default/default has 1 remembered turn(s)\n</memory>");
    // Management operations the class lacks answer 501; secrets in backend_config are not shown.
    expect((await send("GET", "/api/memory")).status).toBe(501);
    const config = (await send("GET", "/api/memory/config")).body;
    expect(config.backend_config).toEqual({ journal, greeting: "Hello from the journal,", api_key: "***" });
  });

  it("stops the start with a clear message when the path cannot be resolved", async () => {
    await expect(startHarness(`${fakeModel()}memory:\n  manager_class: mem0\n`)).rejects.toThrow(/memory\.manager_class 'mem0' is neither a built-in backend \(deermem, noop\) nor a resolvable 'module:Export' path/);
    await expect(startHarness(`${fakeModel()}memory:\n  manager_class: ./no/such/module.mjs:Memory\n`)).rejects.toThrow(/memory\.manager_class '\.\/no\/such\/module\.mjs:Memory'/);
  });
});

describe("memory config", () => {
  const load = (yaml: string) => parseAppConfigText(yaml, "/tmp/config.yaml");

  it("config/config.example.yaml documents every memory key this gateway acts on", () => {
    const text = readFileSync(path.resolve(import.meta.dirname, "../../config/config.example.yaml"), "utf8");
    const section = /^memory:\n([\s\S]*?)\n(?=\S)/m.exec(text)![1];
    const implemented = Object.keys(DeerMemConfigSchema.shape).filter((k) => !(ACCEPTED_WITHOUT_EFFECT_KEYS as readonly string[]).includes(k));
    const missing = [...MEMORY_SHARED_KEYS, ...implemented].filter((key) => !new RegExp(`^\\s+(# )?${key}:`, "m").test(section));
    expect(missing).toEqual([]);
  });

  it("refuses an unknown memory key, naming it", () => {
    expect(() => load("memory:\n  enabeld: true\n")).toThrow(/memory.*enabeld/);
    expect(() => load("memory:\n  backend_config:\n    max_fact: 3\n")).toThrow(/memory\.backend_config.*max_fact/);
    expect(() => load("memory:\n  backend_config:\n    token_counting: bytes\n")).toThrow(/memory\.backend_config\.token_counting/);
  });

  it("moves DeerFlow's legacy top-level keys into backend_config; a custom backend's config passes through", () => {
    const legacy = load("memory:\n  max_facts: 5\n  model_name: small\n  debounce_seconds: 2\n").memory;
    expect(legacy.backend_config).toMatchObject({ max_facts: 5, model_name: "small", debounce_seconds: 2, max_injection_tokens: 2000 });
    const custom = load("memory:\n  manager_class: ./x.mjs:X\n  backend_config:\n    anything: [1, 2]\n").memory;
    expect(custom.backend_config).toEqual({ anything: [1, 2] });
  });

  it("extracts with DeerFlow's model sub-config (provider, model, api_key, base_url) when given", async () => {
    h = await startHarness(`${fakeModel()}memory:\n  backend_config:\n    model:\n      provider: openai\n      model: gpt-direct\n      api_key: sk-direct\n      base_url: ${fake.url}\n`);
    fake.respond = (body) => (isExtraction({ body } as RecordedRequest) ? { content: JSON.stringify({ newFacts: [] }) } : echoReply(body));
    await chat("t-1", "I like sailing.");
    await h.app.deerflow.memoryManager.flush();
    const [extraction] = fake.requests.filter(isExtraction);
    expect(extraction.body.model).toBe("gpt-direct");
    expect(extraction.headers.authorization).toBe("Bearer sk-direct");
    expect((await send("GET", "/api/memory/config")).body.backend_config.model).toEqual({ provider: "openai", model: "gpt-direct", api_key: "***", base_url: fake.url });
  });

  it("refuses an unknown key at start-up with the key in the message", async () => {
    await expect(startHarness(`${fakeModel()}memory:\n  bogus_key: 1\n`)).rejects.toThrow(/bogus_key/);
  });
});

describe("offline scripted model", () => {
  it("extracts first-person sentences as facts by its fixed rule, deterministically", async () => {
    h = await startHarness(`${scriptedModel}memory:\n  backend_config:\n    debounce_seconds: 600\n`);
    await chat("t-1", "My name is Ada. I prefer dark mode! What's the weather? I want to learn Rust.");
    await h.app.deerflow.memoryManager.flush();
    const memory = (await send("GET", "/api/memory")).body;
    expect(memory.facts.map(({ content, category, confidence, source }: any) => ({ content, category, confidence, source }))).toEqual([
      { content: "My name is Ada", category: "context", confidence: 0.9, source: "t-1" },
      { content: "I prefer dark mode", category: "preference", confidence: 0.9, source: "t-1" },
      { content: "I want to learn Rust", category: "goal", confidence: 0.9, source: "t-1" },
    ]);
    expect(memory.user.topOfMind.summary).toBe("Recently discussed: My name is Ada. I prefer dark mode! What's the weather? I want to learn Rust.");
    // The same sentence again is not stored twice.
    await chat("t-2", "I prefer dark mode.");
    await h.app.deerflow.memoryManager.flush();
    expect((await send("GET", "/api/memory")).body.facts).toHaveLength(3);
  });
});

describe("memory.mode: tool", () => {
  it("gives the agent memory tools over the backend and no passive extraction", async () => {
    h = await startHarness(`${scriptedModel}memory:\n  mode: tool\n`);
    const added = await chat("t-1", '!call memory_add {"content": "Likes hiking in the Alps", "category": "preference", "confidence": 0.9}');
    const addResult = JSON.parse(added.messages.at(-2).content);
    expect(addResult).toMatchObject({ status: "added" });
    const found = await chat("t-2", '!call memory_search {"query": "hiking"}');
    const searchResult = JSON.parse(found.messages.at(-2).content);
    expect(searchResult.count).toBe(1);
    expect(searchResult.results[0]).toMatchObject({ id: addResult.fact_id, content: "Likes hiking in the Alps", category: "preference", confidence: 0.9 });
    expect(JSON.parse((await chat("t-3", '!call memory_delete {"fact_id": "fact_nope"}')).messages.at(-2).content)).toEqual({ error: "Fact not found: fact_nope" });
    await h.app.deerflow.memoryManager.flush();
    // Only the tool's fact: the conversation itself was not extracted.
    expect((await send("GET", "/api/memory")).body.facts.map((f: any) => f.content)).toEqual(["Likes hiking in the Alps"]);
  });
});
