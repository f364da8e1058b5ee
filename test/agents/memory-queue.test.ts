import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HumanMessage, AIMessage } from "@langchain/core/messages";
import { afterAll, describe, expect, it } from "vitest";
import { FileMemoryStore } from "../../src/agents/memory/file-memory-store.js";
import { MemoryUpdateQueue } from "../../src/agents/memory/memory-queue.js";

const root = mkdtempSync(path.join(tmpdir(), "dfgw-memq-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("MemoryUpdateQueue", () => {
  it("writes each memory file once per batch, however many conversations it receives", async () => {
    const store = new FileMemoryStore(root);
    let saves = 0;
    const save = store.save.bind(store);
    store.save = (...args: Parameters<typeof store.save>) => {
      saves++;
      return save(...args);
    };
    const queue = new MemoryUpdateQueue(store, { debounceMs: 10_000 });
    for (let i = 0; i < 20; i++) {
      queue.add({ threadId: `t${i}`, userId: "default", agentName: "default", messages: [new HumanMessage(`hello ${i}`), new AIMessage(`hi ${i}`)] });
    }
    queue.add({ threadId: "other", userId: "default", agentName: "researcher", messages: [new HumanMessage("q"), new AIMessage("a")] });
    await queue.flush();
    expect(saves).toBe(2);
    const doc = store.load("default", "default");
    expect(Object.keys(doc.threads)).toHaveLength(20);
    expect(doc.threads.t7.last_user_message).toBe("hello 7");
    expect(store.load("default", "researcher").threads.other.last_assistant_message).toBe("a");
  });
});
