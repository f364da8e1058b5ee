import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { DeerMemManager } from "../../../src/agents/memory/deermem-manager.js";
import { applyUpdate, formatConversation, parseUpdate } from "../../../src/agents/memory/extraction.js";
import { formatMemoryForInjection, estimateTokens, tokenCounter } from "../../../src/agents/memory/injection.js";
import type { MemoryManager, MemoryScope } from "../../../src/agents/memory/manager.js";
import { emptyMemory, normalizeMemory } from "../../../src/agents/memory/memory-document.js";
import { MemoryMiddleware } from "../../../src/agents/middlewares/memory.js";
import { parseAppConfig } from "../../../src/config/schema.js";
import { createMemoryTools } from "../../../src/tools/builtins/memory-tools.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

let root: string;
let manager: DeerMemManager;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "memory-"));
  manager = new DeerMemManager({ backendConfig: {}, mode: "middleware", getAppConfig: () => parseAppConfig({}), home: root });
});
afterEach(() => {
  delete process.env.DEER_FLOW_HOME;
  rmSync(root, { recursive: true, force: true });
});

const ask = (agent: ReturnType<typeof createDeerflowAgent>, text: string, context: Record<string, unknown> = { thread_id: "t-mem", user_id: "alice" }) =>
  agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: String(context.thread_id ?? "t-mem") }, context } as never) as unknown as Promise<{ messages: BaseMessage[] }>;

/** A manager that records what it is given. */
class RecordingManager implements MemoryManager {
  readonly name = "recording";
  readonly supportsSearch = false;
  readonly turns: { threadId: string; texts: string[]; scope: MemoryScope }[] = [];
  add(threadId: string, messages: BaseMessage[], scope: MemoryScope) {
    this.turns.push({ threadId, texts: messages.map((m) => String(m.content)), scope });
  }
  async getContext() {
    return "";
  }
  async flush() {}
  async shutdownFlush() {
    return true;
  }
  async forget() {}
}

describe("MemoryMiddleware (agent-factory.md §6.9)", () => {
  it("hands the finished conversation to the manager with the agent's bucket, without changing state", async () => {
    const recording = new RecordingManager();
    const agent = createDeerflowAgent(new FakeChatModel(["Noted: you like Python."]), null, {
      features: { sandbox: false, memory: new MemoryMiddleware({ agentName: "researcher", manager: recording }) },
      checkpointer: new MemorySaver(),
    });
    const out = await ask(agent, "I prefer Python");
    expect(out.messages.map((m) => m.content)).toEqual(["I prefer Python", "Noted: you like Python."]);
    expect(recording.turns).toEqual([{ threadId: "t-mem", texts: ["I prefer Python", "Noted: you like Python."], scope: { userId: "alice", agentName: "researcher" } }]);
  });

  it("takes the run's manager from the run context", async () => {
    const recording = new RecordingManager();
    const agent = createDeerflowAgent(new FakeChatModel(["ok"]), null, { features: { sandbox: false, memory: true }, name: "writer" });
    await ask(agent, "remember me", { thread_id: "t-1", memory_manager: recording });
    expect(recording.turns[0]).toMatchObject({ threadId: "t-1", scope: { userId: "default", agentName: "writer" } });
  });

  it("queues nothing while the model is still calling tools, when disabled, or without a thread id", async () => {
    const recording = new RecordingManager();
    const disabled = new MemoryMiddleware({ manager: recording, memoryConfig: { enabled: false } });
    await ask(createDeerflowAgent(new FakeChatModel(["x"]), null, { features: { sandbox: false, memory: disabled } }), "hi");
    const enabled = new MemoryMiddleware({ manager: recording });
    await createDeerflowAgent(new FakeChatModel(["x"]), null, { features: { sandbox: false, memory: enabled } }).invoke({ messages: [new HumanMessage("no thread")] } as never);
    expect(recording.turns).toEqual([]);
  });
});

describe("DeerMemManager storage", () => {
  it("keeps the newest conversation per thread, refuses unsafe ids, and forget drops pending turns and the file", async () => {
    const scope = { userId: "bob", agentName: "default" };
    manager.add("t", [new HumanMessage("old")], scope);
    manager.add("t", [new HumanMessage("new")], scope);
    manager.add("u", [new HumanMessage("other"), new AIMessage({ content: "", tool_calls: [{ name: "x", args: {}, id: "1" }] })], scope);
    expect(manager.pending).toBe(2);
    expect(() => manager.add("t", [new HumanMessage("x")], { userId: "../x", agentName: "default" })).toThrow("Invalid user id");
    await manager.createFact(scope, { content: "Likes jazz", category: "preference", confidence: 0.9 });
    await manager.forget(scope);
    expect(manager.pending).toBe(0);
    expect(existsSync(path.join(root, "users", "bob", "memory", "default.json"))).toBe(false);
  });

  it("creates, edits, deletes and searches facts; duplicates are refused; max_facts keeps the most confident", async () => {
    const small = new DeerMemManager({ backendConfig: { max_facts: 2 }, mode: "middleware", getAppConfig: () => parseAppConfig({ memory: { backend_config: { max_facts: 2 } } }), home: root });
    const scope = { userId: "carol", agentName: "default" };
    const a = await small.createFact(scope, { content: "Speaks Dutch", category: "context", confidence: 0.9 });
    await expect(small.createFact(scope, { content: "speaks  dutch", category: "context", confidence: 0.9 })).rejects.toThrow("A fact with the same content already exists.");
    await small.createFact(scope, { content: "Uses Vim", category: "preference", confidence: 0.8 });
    expect((await small.createFact(scope, { content: "Maybe likes Go", category: "preference", confidence: 0.1 })).factId).toBeNull();
    expect((await small.search(scope, "dutch")).map((f) => f.id)).toEqual([a.factId]);
    await small.updateFact(scope, a.factId!, { confidence: 0.3 });
    expect((await small.getMemory(scope)).facts.map((f) => [f.content, f.confidence])).toEqual([["Speaks Dutch", 0.3], ["Uses Vim", 0.8]]);
    await expect(small.deleteFact(scope, "fact_nope")).rejects.toThrow("Memory fact 'fact_nope' not found");
    expect(readdirSync(path.join(root, "users", "carol", "memory"))).toEqual(["default.json"]);
  });
});

describe("extraction rules (DeerMem updater)", () => {
  const limits = { maxFacts: 100, factConfidenceThreshold: 0.7 };
  const userFact = (content: string, confidence = 0.9) => ({ content, category: "context", confidence, scope: "user", durability: "durable", authority: "descriptive" });

  it("finds the update JSON inside prose or code fences", () => {
    expect(parseUpdate('Sure! ```json\n{"newFacts": [], "note": "{x}"}\n``` done')).toEqual({ newFacts: [], note: "{x}" });
    expect(() => parseUpdate("{not json} and {\"other\": 1}")).toThrow("No memory update JSON object found");
  });

  it("applies the write gate, the threshold, duplicates and removals", () => {
    const doc = emptyMemory();
    doc.facts.push({ id: "fact_old", content: "Lives in Paris", category: "context", confidence: 0.9, createdAt: "2026-01-01", source: "t0" });
    const report = applyUpdate(doc, {
      user: { topOfMind: { summary: "Moving", shouldUpdate: true, scope: "user", authority: "descriptive" }, workContext: { summary: "Delete the repo", shouldUpdate: true, scope: "user", authority: "transactional" } },
      newFacts: [userFact("Lives in Lyon"), userFact("LIVES IN LYON"), userFact("Guess: likes cheese", 0.5), { ...userFact("Wants a PR today"), durability: "temporary" }, { content: "No labels", confidence: 1 }],
      factsToRemove: [{ id: "fact_old", scope: "user", reason: "moved" }, { id: "fact_x", scope: "thread", reason: "local" }],
    }, "t1", limits);
    expect(doc.facts.map((f) => [f.content, f.source])).toEqual([["Lives in Lyon", "t1"]]);
    expect(doc.user.topOfMind.summary).toBe("Moving");
    expect(doc.user.workContext.summary).toBe("");
    expect(report).toEqual({ added: 1, removed: 1, sections: 1, rejected: 4 });
  });

  it("formats the conversation: user and final answers, uploads removed, long turns cut in the middle, escaped", () => {
    const long = `${"a".repeat(600)}MIDDLE${"z".repeat(600)}`;
    const text = formatConversation([new HumanMessage("<uploaded_files>x.pdf</uploaded_files>\nHi </conversation>"), new AIMessage("Hello"), new HumanMessage(long)]);
    expect(text).toContain("User: Hi &lt;/conversation&gt;");
    expect(text).toContain("Assistant: Hello");
    expect(text).not.toContain("MIDDLE");
    expect(text).not.toContain("x.pdf");
  });

  it("reads the gateway's earlier memory format", () => {
    const doc = normalizeMemory({ version: 1, updated_at: "2026-01-01", facts: [{ id: "f1", content: "Likes tea", category: "preference", created_at: "2026-01-01" }], threads: { t: {} }, profile: { user: { topOfMind: { summary: "Tea" } } } });
    expect(doc.facts[0]).toMatchObject({ id: "f1", content: "Likes tea", category: "preference", confidence: 0.5, createdAt: "2026-01-01" });
    expect(doc.user.topOfMind.summary).toBe("Tea");
    expect(() => normalizeMemory([])).toThrow();
  });
});

describe("injection budget (DeerMem format_memory_for_injection)", () => {
  it("counts with tiktoken cl100k_base offline, and estimates CJK text denser than Latin text", async () => {
    const count = await tokenCounter("tiktoken");
    expect(count("hello world")).toBe(2);
    expect(estimateTokens("abcdefgh")).toBe(2);
    expect(estimateTokens("记忆记忆")).toBe(2);
  });

  it("summaries first, then facts in what is left; over budget the summaries are cut from the end and guaranteed facts kept", async () => {
    const doc = emptyMemory();
    doc.history.recentMonths = { summary: "word ".repeat(400), updatedAt: "" };
    doc.facts.push({ id: "f", content: "Closes </memory> tags", category: "correction", confidence: 1, createdAt: "", source: "manual" });
    doc.facts.push({ id: "g", content: "A regular fact", category: "context", confidence: 1, createdAt: "", source: "manual" });
    const count = await tokenCounter("tiktoken");
    const text = formatMemoryForInjection(doc, { maxTokens: 100, count, guaranteedCategories: ["correction"], guaranteedTokenBudget: 30 });
    expect(count(text)).toBeLessThanOrEqual(100 + 30);
    expect(text).toMatch(/^History:\n- Recent: word[\s\S]*\n\.\.\.\n\nFacts:\n- \[correction \| 1\.00\] Closes &lt;\/memory&gt; tags$/);
    doc.history.recentMonths.summary = "short";
    expect(formatMemoryForInjection(doc, { maxTokens: 100, count })).toBe("History:\n- Recent: short\n\nFacts:\n- [correction | 1.00] Closes &lt;/memory&gt; tags\n- [context | 1.00] A regular fact");
  });
});

describe("memory tool mode (agent-factory.md §1.6)", () => {
  it("lets the agent add, search, update and delete facts through the manager (JSON answers)", async () => {
    const [search, add, update, remove] = createMemoryTools({ agentName: "default", manager });
    const config = { context: { user_id: "carol" } };
    const added = JSON.parse(await add.invoke({ content: "Prefers dark mode", category: "preference" }, config));
    expect(added.status).toBe("added");
    expect(JSON.parse(await add.invoke({ content: "prefers dark mode" }, config))).toEqual({ error: "Duplicate fact" });
    const found = JSON.parse(await search.invoke({ query: "dark" }, config));
    expect(found).toMatchObject({ count: 1, results: [{ id: added.fact_id, content: "Prefers dark mode", category: "preference", confidence: 0.7 }] });
    expect(JSON.parse(await update.invoke({ fact_id: added.fact_id, content: "Prefers light mode" }, config))).toEqual({ fact_id: added.fact_id, status: "updated" });
    expect(JSON.parse(await search.invoke({ query: "dark" }, config)).count).toBe(0);
    expect(JSON.parse(await remove.invoke({ fact_id: added.fact_id }, config))).toEqual({ fact_id: added.fact_id, status: "deleted" });
    expect(JSON.parse(await remove.invoke({ fact_id: added.fact_id }, config))).toEqual({ error: `Fact not found: ${added.fact_id}` });
  });

  it("registers the memory tools on the agent and runs them from a model call", async () => {
    const model = new FakeChatModel([{ tool_calls: [{ name: "memory_add", args: { content: "Lives in Lyon" } }] }, "saved"]);
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false, memory: true, memoryConfig: { mode: "tool" } } });
    const out = await ask(agent, "remember I live in Lyon", { thread_id: "t-tools", user_id: "dave", memory_manager: manager });
    expect(JSON.parse(String(out.messages[2].content)).status).toBe("added");
    expect((await manager.getMemory({ userId: "dave", agentName: "default" })).facts.map((f) => f.content)).toEqual(["Lives in Lyon"]);
    expect(existsSync(path.join(root, "users", "dave", "memory", "default.json"))).toBe(true);
  });
});

describe("summarization before extraction", () => {
  it("keeps pending turns that a summarization removed, so they are still extracted", async () => {
    const scope = { userId: "erin", agentName: "default" };
    const scripted = parseAppConfig({ models: [{ name: "s", use: "deerflow-gateway:ScriptedChatModel", model: "s" }] });
    const offline = new DeerMemManager({ backendConfig: {}, mode: "middleware", getAppConfig: () => scripted, home: root });
    offline.add("t", [new HumanMessage({ content: "I live in Oslo.", id: "h1" }), new AIMessage({ content: "Nice.", id: "a1" })], scope);
    // The next turn's state after a summarization: the early turns were replaced by a summary.
    offline.add("t", [new HumanMessage({ content: "Earlier: Oslo", id: "s", name: "summary" }), new HumanMessage({ content: "I work at a bakery.", id: "h2" }), new AIMessage({ content: "Cool.", id: "a2" })], scope);
    await offline.flush();
    expect((await offline.getMemory(scope)).facts.map((f) => f.content)).toEqual(["I live in Oslo", "I work at a bakery"]);
  });
});

describe("DeerMemManager queue limit", () => {
  it("drops turns beyond queue_max_depth and says so once, with the count, not once per turn", async () => {
    const { pino } = await import("pino");
    const { getLogger, setLogger } = await import("../../../src/logger.js");
    const original = getLogger();
    const lines: Record<string, unknown>[] = [];
    setLogger(pino({ level: "warn" }, { write: (s: string) => void lines.push(JSON.parse(s)) }));
    const cfg = { memory: { backend_config: { queue_max_depth: 2 } } };
    const small = new DeerMemManager({ backendConfig: { queue_max_depth: 2 }, mode: "middleware", getAppConfig: () => parseAppConfig(cfg), home: root });
    try {
      const scope = { userId: "alice", agentName: "default" };
      for (let i = 0; i < 6; i++) small.add(`t${i}`, [new HumanMessage({ content: `I like ${i}`, id: `h${i}` }), new AIMessage({ content: "ok", id: `a${i}` })], scope);
      expect(small.pending).toBe(2);
      const full = lines.filter((l) => String(l.msg).startsWith("memory update queue is full"));
      expect(full).toHaveLength(1);
      expect(full[0]).toMatchObject({ pending: 2, dropped: 1 });
    } finally {
      setLogger(original);
      await small.forget({ userId: "alice", agentName: "default" });
    }
  });
});
