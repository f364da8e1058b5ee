import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { FileMemoryStore } from "../../../src/agents/memory/file-memory-store.js";
import { MemoryUpdateQueue } from "../../../src/agents/memory/memory-queue.js";
import { MemoryMiddleware } from "../../../src/agents/middlewares/memory.js";
import { createMemoryTools } from "../../../src/tools/builtins/memory-tools.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

let root: string;
let store: FileMemoryStore;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "memory-"));
  store = new FileMemoryStore(root);
});
afterEach(() => {
  delete process.env.DEER_FLOW_HOME;
  rmSync(root, { recursive: true, force: true });
});

const ask = (agent: ReturnType<typeof createDeerflowAgent>, text: string, context: Record<string, unknown> = { thread_id: "t-mem", user_id: "alice" }) =>
  agent.invoke({ messages: [new HumanMessage(text)] } as never, { configurable: { thread_id: String(context.thread_id ?? "t-mem") }, context } as never) as unknown as Promise<{ messages: BaseMessage[] }>;

describe("MemoryMiddleware (agent-factory.md §6.9)", () => {
  it("queues the finished conversation and writes it to the agent's memory file, without changing state", async () => {
    const queue = new MemoryUpdateQueue(store);
    const agent = createDeerflowAgent(new FakeChatModel(["Noted: you like Python."]), null, {
      features: { sandbox: false, memory: new MemoryMiddleware({ agentName: "researcher", queue }) },
      checkpointer: new MemorySaver(),
    });
    const out = await ask(agent, "I prefer Python");
    expect(out.messages.map((m) => m.content)).toEqual(["I prefer Python", "Noted: you like Python."]);
    expect(queue.pending).toBe(1);
    await queue.flush();
    const doc = store.load("alice", "researcher");
    expect(doc.threads["t-mem"]).toMatchObject({ turns: 2, last_user_message: "I prefer Python", last_assistant_message: "Noted: you like Python." });
    expect(readdirSync(path.join(root, "users", "alice", "memory"))).toEqual(["researcher.json"]);
  });

  it("uses the agent name as the bucket of the built-in memory and DEER_FLOW_HOME as the root", async () => {
    process.env.DEER_FLOW_HOME = root;
    const agent = createDeerflowAgent(new FakeChatModel(["ok"]), null, { features: { sandbox: false, memory: true }, name: "writer" });
    await ask(agent, "remember me", { thread_id: "t-1" });
    const mw = (agent as unknown as { options: { middleware: MemoryMiddleware[] } }).options.middleware.find((m) => m.name === "MemoryMiddleware")!;
    expect(mw.agentName).toBe("writer");
    await mw.queue.flush();
    expect(store.load("default", "writer").threads["t-1"].last_user_message).toBe("remember me");
  });

  it("queues nothing while the model is still calling tools, when disabled, or without a thread id", async () => {
    const queue = new MemoryUpdateQueue(store);
    const disabled = new MemoryMiddleware({ queue, memoryConfig: { enabled: false } });
    await ask(createDeerflowAgent(new FakeChatModel(["x"]), null, { features: { sandbox: false, memory: disabled } }), "hi");
    const enabled = new MemoryMiddleware({ queue });
    await createDeerflowAgent(new FakeChatModel(["x"]), null, { features: { sandbox: false, memory: enabled } }).invoke({ messages: [new HumanMessage("no thread")] } as never);
    expect(queue.pending).toBe(0);
  });

  it("coalesces updates per conversation and survives a corrupt memory file", async () => {
    mkdirSync(path.join(root, "users", "bob", "memory"), { recursive: true });
    writeFileSync(path.join(root, "users", "bob", "memory", "default.json"), "{not json");
    const queue = new MemoryUpdateQueue(store);
    const base = { threadId: "t", userId: "bob", agentName: "default" };
    queue.add({ ...base, messages: [new HumanMessage("old")] });
    queue.add({ ...base, messages: [new HumanMessage("new")] });
    expect(queue.pending).toBe(1);
    await queue.flush();
    expect(store.load("bob", "default").threads.t.last_user_message).toBe("new");
    expect(() => store.fileFor("../x", "default")).toThrow("Invalid user id");
  });
});

describe("memory tool mode (agent-factory.md §1.6)", () => {
  it("lets the agent add, search, update and delete facts in the file store", async () => {
    const [search, add, update, remove] = createMemoryTools({ agentName: "default", store });
    const config = { context: { user_id: "carol" } };
    expect(await add.invoke({ content: "Prefers dark mode", category: "preference" }, config)).toContain("Remembered");
    const id = store.load("carol", "default").facts[0].id;
    expect(await search.invoke({ query: "dark" }, config)).toContain(`[${id}] (preference) Prefers dark mode`);
    expect(await update.invoke({ id, content: "Prefers light mode" }, config)).toContain("Prefers light mode");
    expect(await search.invoke({ query: "dark" }, config)).toBe("No memories found matching: dark");
    expect(await remove.invoke({ id }, config)).toBe(`Deleted memory ${id}`);
    expect(await remove.invoke({ id }, config)).toContain("Error: no memory");
  });

  it("registers the memory tools on the agent and runs them from a model call", async () => {
    process.env.DEER_FLOW_HOME = root;
    const model = new FakeChatModel([{ tool_calls: [{ name: "memory_add", args: { content: "Lives in Lyon" } }] }, "saved"]);
    const agent = createDeerflowAgent(model, null, { features: { sandbox: false, memory: true, memoryConfig: { mode: "tool" } } });
    const out = await ask(agent, "remember I live in Lyon", { thread_id: "t-tools", user_id: "dave" });
    expect(String(out.messages[2].content)).toContain("Remembered");
    expect(store.load("dave", "default").facts.map((f) => f.content)).toEqual(["Lives in Lyon"]);
    expect(existsSync(path.join(root, "users", "dave", "memory", "default.json"))).toBe(true);
  });
});
