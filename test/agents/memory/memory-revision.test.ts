// Memory writes are a compare-and-set on the document's revision (DeerMem's optimistic manifest revision): every write
// increments it, a stale expected revision is refused (409 over HTTP, upstream's detail), and concurrent writers
// never lose an update: many requests at once, and several processes writing one user's memory file.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileMemoryStore } from "../../../src/agents/memory/file-memory-store.js";
import { MemoryConflictError } from "../../../src/agents/memory/manager.js";
import { emptyMemory } from "../../../src/agents/memory/memory-document.js";
import { startHarness, type Harness } from "../../support/harness.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });
const dirs: string[] = [];
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), "memrev-"));
  dirs.push(d);
  return d;
};

describe("memory revision", () => {
  it("increments on every write and refuses a stale expected revision without writing", () => {
    const store = new FileMemoryStore(tempDir());
    expect(store.load("u1", "default").revision).toBe(0);
    expect(store.save("u1", "default", emptyMemory(), 0).revision).toBe(1);
    expect(store.update("u1", "default", (doc) => void (doc.user.topOfMind.summary = "ships v2")).revision).toBe(2);
    const stale = { ...store.load("u1", "default"), facts: [] };
    expect(() => store.save("u1", "default", { ...stale, user: { ...stale.user, topOfMind: { summary: "lost", updatedAt: "" } } }, 1)).toThrow(MemoryConflictError);
    expect(store.load("u1", "default")).toMatchObject({ revision: 2, user: { topOfMind: { summary: "ships v2" } } });
  });

  it("answers 409 with upstream's detail when the memory stays locked by another writer, and writes nothing", async () => {
    h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    const store = new FileMemoryStore(path.join(h.dir, ".deer-flow"));
    const file = store.fileFor("default", "default");
    // Another process holds the scope's lock (fresh, so not stale) for longer than a writer waits.
    mkdirSync(`${file}.lock`, { recursive: true });
    const res = await fetch(`${h.url}/api/memory/facts`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "blocked" }) });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ detail: "Memory changed concurrently; reload and retry." });
    rmSync(`${file}.lock`, { recursive: true });
    expect(await (await fetch(`${h.url}/api/memory`)).json()).toMatchObject({ revision: 0, facts: [] });
  });

  it("keeps every one of 40 concurrent fact creations over HTTP, revision 40", async () => {
    h = await startHarness("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n");
    const post = (i: number) => fetch(`${h!.url}/api/memory/facts`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: `fact number ${i}` }) });
    const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => post(i).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const memory = (await (await fetch(`${h.url}/api/memory`)).json()) as { revision: number; facts: { content: string }[] };
    expect(memory.revision).toBe(40);
    expect(memory.facts.map((f) => f.content).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `fact number ${i}`).sort());
  });

  it("loses no update when four processes write one memory file at once", async () => {
    const root = tempDir();
    const writer = path.resolve(__dirname, "../../support/memory-writer.ts");
    const run = promisify(execFile);
    await Promise.all(["p1", "p2", "p3", "p4"].map((tag) => run(process.execPath, ["--import", "tsx", writer, root, tag, "60"], { cwd: path.resolve(__dirname, "../../..") })));
    const doc = new FileMemoryStore(root).load("u1", "default");
    expect(doc.facts).toHaveLength(240);
    expect(doc.revision).toBe(240);
  });
});
