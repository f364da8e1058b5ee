// A child process for the memory concurrency test: adds `count` facts (`<tag>-<i>`) to one memory document through
// FileMemoryStore.update, as fast as it can, then exits. Run with `node --import tsx memory-writer.ts <root> <tag> <count>`.
import { FileMemoryStore } from "../../src/agents/memory/file-memory-store.js";

const [root, tag, count] = process.argv.slice(2);
const store = new FileMemoryStore(root);
for (let i = 0; i < Number(count); i++) {
  store.update("u1", "default", (doc) => {
    doc.facts.push({ id: `${tag}-${i}`, content: `${tag} fact ${i}`, category: "context", confidence: 0.9, createdAt: new Date().toISOString(), source: "test" });
  });
}
