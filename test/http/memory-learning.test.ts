// Issue 14 item 1: memory that learns. Runs over HTTP against the fake OpenAI server, which records every request:
// the extraction call after a turn, the stored facts, and the memory in the next thread's prompt.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MEMORY_UPDATE_MARKER } from "../../src/agents/memory/extraction.js";
import { captureLogs } from "../support/capture-logs.js";
import { echoReply, useFakeOpenAI, type FakeReply, type RecordedRequest } from "../support/fake-openai.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { signUp } from "../support/auth-client.js";

const fake = useFakeOpenAI();
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const models = () =>
  `models:\n` +
  `  - name: chat\n    use: langchain_openai:ChatOpenAI\n    model: gpt-chat\n    api_key: sk-test\n    base_url: ${fake.url}\n    max_retries: 0\n` +
  `  - name: extractor\n    use: langchain_openai:ChatOpenAI\n    model: gpt-memory\n    api_key: sk-test\n    base_url: ${fake.url}\n    max_retries: 0\n`;
const config = (memory = "", extra = "") => `${models()}${extra}memory:\n  backend_config:\n    model_name: extractor\n${memory}`;

const textOfMessage = (m: any): string => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b: any) => b.text ?? "").join(""));
const isExtraction = (r: RecordedRequest) => textOfMessage(r.body.messages?.[0] ?? {}).startsWith(MEMORY_UPDATE_MARKER);
const chatRequests = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions") && !isExtraction(r));
const extractionRequests = () => fake.requests.filter(isExtraction);
/** Everything the model saw in a request, joined. */
const promptOf = (r: RecordedRequest) => r.body.messages.map(textOfMessage).join("\n");

const fact = (content: string, category = "preference", confidence = 0.95, labels: Record<string, string> = {}) => ({ content, category, confidence, scope: "user", durability: "durable", authority: "descriptive", ...labels });
/** The fake answers extraction requests with `update(body)` and chat requests with the echo. */
const scriptExtraction = (update: (body: Record<string, any>) => Record<string, unknown>) => {
  fake.respond = (body): FakeReply => (textOfMessage(body.messages[0]).startsWith(MEMORY_UPDATE_MARKER) ? { content: JSON.stringify(update(body)) } : echoReply(body));
};

const chat = async (thread: string, content: string, extra: Record<string, unknown> = {}) => {
  const created = await postJson(`${h!.url}/threads`, { thread_id: thread, if_exists: "do_nothing" });
  expect(created.status, await created.clone().text()).toBe(200);
  const res = await postJson(`${h!.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content }] }, ...extra });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
};
const getJson = async (url: string) => (await fetch(`${h!.url}${url}`)).json();
const flush = () => h!.app.deerflow.memoryManager.flush();
const memoryFile = (user: string, agent = "default") => path.join(process.env.DEER_FLOW_HOME!, "users", user, "memory", `${agent}.json`);

describe("memory that learns (default deermem backend)", () => {
  it("extracts facts with the configured model after a turn and injects them into a new thread's prompt", async () => {
    h = await startHarness(config());
    scriptExtraction(() => ({
      user: { workContext: { summary: "Builds a TypeScript gateway.", shouldUpdate: true, scope: "user", authority: "descriptive" } },
      newFacts: [
        fact("Prefers tabs over spaces"),
        fact("Might like Rust", "preference", 0.5), // under fact_confidence_threshold 0.7
        fact("Wants the answer in French for this thread", "preference", 0.95, { scope: "thread" }), // write gate
      ],
    }));
    await chat("thread-1", "I prefer tabs over spaces. Please answer in French for now.");
    expect(extractionRequests()).toHaveLength(0); // debounced: nothing before the batch is due
    await flush();

    const [extraction] = extractionRequests();
    expect(extraction.body.model).toBe("gpt-memory");
    expect(promptOf(extraction)).toContain("User: I prefer tabs over spaces.");
    expect(promptOf(extraction)).toContain("Assistant: Echo: I prefer tabs over spaces.");

    const memory = await getJson("/api/memory");
    expect(memory.facts).toHaveLength(1);
    expect(memory.facts[0]).toMatchObject({ content: "Prefers tabs over spaces", category: "preference", confidence: 0.95, source: "thread-1" });
    expect(memory.facts[0].id).toMatch(/^fact_[0-9a-f]{12}$/);
    expect(memory.user.workContext.summary).toBe("Builds a TypeScript gateway.");

    await chat("thread-2", "What do you know about me?");
    const prompt = promptOf(chatRequests().at(-1)!);
    expect(prompt).toContain("<memory>\nUser Context:\n- Work: Builds a TypeScript gateway.\n\nFacts:\n- [preference | 0.95] Prefers tabs over spaces\n</memory>");
    expect(prompt).not.toContain("Might like Rust");
    expect(prompt).not.toContain("French for this thread");
  });

  it("batches a user's pending turns into one extraction and sends only turns not extracted before", async () => {
    h = await startHarness(config());
    scriptExtraction(() => ({ newFacts: [] }));
    await chat("a", "first thread");
    await chat("b", "second thread");
    await flush();
    expect(extractionRequests()).toHaveLength(1);
    expect(promptOf(extractionRequests()[0])).toMatch(/first thread[\s\S]*second thread/);
    await chat("a", "a follow-up");
    await flush();
    const second = promptOf(extractionRequests()[1]);
    expect(second).toContain("User: a follow-up");
    expect(second).not.toContain("User: first thread");
  });

  it("keeps users apart: user B never sees user A's facts", async () => {
    h = await startHarness(config(), { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct-horse-battery", "initialize");
    const bob = await signUp(h.url, "bob@example.com", "correct-horse-battery");
    scriptExtraction((body) => ({ newFacts: promptOf({ body } as RecordedRequest).includes("pelican") ? [fact("Keeps a pet pelican named Gus", "context")] : [] }));
    const run = async (session: typeof alice, content: string) => {
      const thread = (await (await session.fetch("/threads", { json: {} })).json()).thread_id;
      const res = await session.fetch(`/threads/${thread}/runs/wait`, { json: { input: { messages: [{ role: "user", content }] } } });
      expect(res.status).toBe(200);
    };
    await run(alice, "I keep a pet pelican named Gus.");
    await flush();
    expect((await (await alice.fetch("/api/memory")).json()).facts.map((f: any) => f.content)).toEqual(["Keeps a pet pelican named Gus"]);
    expect((await (await bob.fetch("/api/memory")).json()).facts).toEqual([]);
    await run(bob, "What pets do I have?");
    expect(promptOf(chatRequests().at(-1)!)).not.toContain("pelican");
    await run(alice, "What pets do I have?");
    expect(promptOf(chatRequests().at(-1)!)).toContain("Keeps a pet pelican named Gus");
  });

  it("keeps agents apart: a custom agent's facts stay in its own memory", async () => {
    h = await startHarness(config("", "agents_api:\n  enabled: true\n"));
    scriptExtraction((body) => ({ newFacts: promptOf({ body } as RecordedRequest).includes("rooftop") ? [fact("Grows tomatoes on a rooftop", "context")] : [] }));
    expect((await postJson(`${h.url}/api/agents`, { name: "garden-bot", soul: "You garden." })).status).toBe(201);
    await chat("g-1", "I grow tomatoes on a rooftop.", { assistant_id: "garden-bot" });
    await flush();
    expect(JSON.parse(readFileSync(memoryFile("default", "garden-bot"), "utf8")).facts[0].content).toBe("Grows tomatoes on a rooftop");
    expect((await getJson("/api/memory")).facts).toEqual([]);
    expect((await getJson("/api/memory?agent_name=garden-bot")).facts).toHaveLength(1);
    await chat("d-1", "Hello default agent");
    expect(promptOf(chatRequests().at(-1)!)).not.toContain("rooftop");
    await chat("g-2", "Hello garden bot", { assistant_id: "garden-bot" });
    expect(promptOf(chatRequests().at(-1)!)).toContain("Grows tomatoes on a rooftop");
  });

  it("injects within max_injection_tokens: the highest-confidence facts, guaranteed corrections first", async () => {
    h = await startHarness(config("    max_injection_tokens: 60\n    token_counting: char\n    guaranteed_token_budget: 20\n"));
    const facts = Array.from({ length: 12 }, (_, i) => ({ content: `Fact number ${i} about the user's long-running project`, category: "context", confidence: 0.5 + i / 100 }));
    facts.push({ content: "Use uv, not pip", category: "correction", confidence: 0.4 });
    expect((await postJson(`${h.url}/api/memory/import`, { facts })).status).toBe(200);
    await chat("t", "hi");
    const block = /<memory>\n([\s\S]*?)\n<\/memory>/.exec(promptOf(chatRequests().at(-1)!))![1];
    const lines = block.split("\n").filter((l) => l.startsWith("- ["));
    // The correction survives although it has the lowest confidence; then facts by confidence, high to low.
    expect(lines[0]).toBe("- [correction | 0.40] Use uv, not pip");
    expect(lines[1]).toContain("Fact number 11");
    expect(lines.length).toBeLessThan(13);
    expect(block).not.toContain("Fact number 0 ");
    // The character estimate of what was injected stays within budget plus the guaranteed lines.
    expect(Math.floor(block.length / 4)).toBeLessThanOrEqual(60 + 20);
  });

  it("imports under the learned-fact rules: one copy of a text, at most max_facts (lowest confidence out)", async () => {
    h = await startHarness(config("    max_facts: 3\n"));
    const facts = [0.5, 0.9, 0.6, 0.8, 0.7].map((confidence, i) => ({ content: `Imported fact ${i}`, category: "context", confidence }));
    facts.push({ content: "imported FACT 1", category: "context", confidence: 0.95 });
    expect((await postJson(`${h.url}/api/memory/import`, { facts })).status).toBe(200);
    const kept = ((await getJson("/api/memory")).facts as { content: string }[]).map((f) => f.content).sort();
    expect(kept).toEqual(["Imported fact 1", "Imported fact 3", "Imported fact 4"]);
  });

  it("follows config.yaml edits without a restart: injection off still learns, a new budget applies at once", async () => {
    h = await startHarness(config("", "").replace("memory:\n", "memory:\n  injection_enabled: false\n"));
    scriptExtraction(() => ({ newFacts: [fact("Collects vinyl records", "context", 0.9), fact("Plays the cello every evening", "context", 0.8)] }));
    await chat("t-1", "I collect vinyl and play the cello.");
    await flush();
    expect((await getJson("/api/memory")).facts).toHaveLength(2);
    await chat("t-2", "hello");
    expect(promptOf(chatRequests().at(-1)!)).not.toContain("<memory>\n");
    h.writeConfig(config("    max_injection_tokens: 14\n    token_counting: char\n"));
    await chat("t-3", "hello again");
    const prompt = promptOf(chatRequests().at(-1)!);
    expect(prompt).toContain("<memory>\nFacts:\n- [context | 0.90] Collects vinyl records\n</memory>");
    expect(prompt).not.toContain("cello");
  });

  it("a malformed memory file: a logged warning, a working run, the file kept aside, then fresh memory", async () => {
    h = await startHarness(config());
    const file = memoryFile("default");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "{not json");
    scriptExtraction(() => ({ newFacts: [fact("Likes green tea")] }));
    const logs = captureLogs();
    try {
      await chat("t-1", "I like green tea.");
    } finally {
      logs.restore();
    }
    expect(logs.messages()).toContain("memory file is malformed; moved aside, continuing with empty memory");
    expect(JSON.stringify(logs.lines())).not.toContain(process.env.DEER_FLOW_HOME!);
    expect(promptOf(chatRequests().at(-1)!)).not.toContain("<memory>\n");
    const aside = readdirSync(path.dirname(file)).filter((f) => f.startsWith("default.json.corrupt-"));
    expect(aside).toHaveLength(1);
    expect(readFileSync(path.join(path.dirname(file), aside[0]), "utf8")).toBe("{not json");
    await flush();
    expect(JSON.parse(readFileSync(file, "utf8")).facts.map((f: any) => f.content)).toEqual(["Likes green tea"]);
  });

  it("an extraction answer that is not JSON leaves memory as it was and the run unaffected", async () => {
    h = await startHarness(config());
    fake.respond = (body) => (textOfMessage(body.messages[0]).startsWith(MEMORY_UPDATE_MARKER) ? { content: "Sorry, I cannot help with that." } : echoReply(body));
    const logs = captureLogs();
    try {
      await chat("t-1", "I like green tea.");
      await flush();
    } finally {
      logs.restore();
    }
    expect(logs.messages()).toContain("memory update failed");
    expect(existsSync(memoryFile("default"))).toBe(false);
    expect((await getJson("/api/memory")).facts).toEqual([]);
  });

  it("drains pending updates when the server closes", async () => {
    h = await startHarness(config("    debounce_seconds: 600\n"));
    scriptExtraction(() => ({ newFacts: [fact("Drinks oolong")] }));
    await chat("t-1", "I drink oolong.");
    const file = memoryFile("default");
    expect(existsSync(file)).toBe(false);
    await h.app.close();
    expect(JSON.parse(readFileSync(file, "utf8")).facts.map((f: any) => f.content)).toEqual(["Drinks oolong"]);
  });

  it("gives up the drain after shutdown_flush_timeout_seconds and still closes", async () => {
    h = await startHarness(config("    debounce_seconds: 600\n", "").replace("memory:\n", "memory:\n  shutdown_flush_timeout_seconds: 1\n"));
    fake.respond = (body) => (textOfMessage(body.messages[0]).startsWith(MEMORY_UPDATE_MARKER) ? { content: JSON.stringify({ newFacts: [fact("Too late")] }), delayMs: 4000 } : echoReply(body));
    await chat("t-1", "I am slow to remember.");
    const logs = captureLogs();
    try {
      await h.app.close();
    } finally {
      logs.restore();
    }
    expect(logs.messages()).toContain("memory drain did not finish in time; the rest of the pending updates are dropped");
    expect(existsSync(memoryFile("default"))).toBe(false);
  });
});
