// Issue 50 item 3: memory on PostgreSQL. Two real gateway processes on one PostgreSQL and one Redis, each with its
// OWN DEER_FLOW_HOME (as on two hosts): a user's memory is one document in PostgreSQL, so what one process learns
// or edits the other reads, and concurrent writers through both (the fact routes, and the memory update the agent
// makes after its runs) lose nothing. A home's memory files are imported once when PostgreSQL is first used.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { MemoryConflictError } from "../../src/agents/memory/manager.js";
import { emptyMemory } from "../../src/agents/memory/memory-document.js";
import { PgMemoryStore } from "../../src/runtime/persistence/postgres/pg-memory-store.js";
import { useGatewayCluster } from "../support/gateway-cluster.js";
import type { GatewayProcess } from "../support/gateway-process.js";
import { until } from "../support/wait.js";

const SEEDED = { id: "fact_seeded00001", content: "Seeded from the files of home A", category: "context", confidence: 0.9, createdAt: "2026-01-01T00:00:00.000Z", source: "manual" };

const cluster = useGatewayCluster(
  `models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
title: {enabled: false}
memory:
  backend_config:
    debounce_seconds: 0
    max_facts: 1000
`,
  {
    separateHomes: true,
    // Home A ran on files before: its user's memory is there, revision 3.
    prepare: (c) => {
      const seeded = path.join(c.home(0), "users", "default", "memory");
      mkdirSync(seeded, { recursive: true });
      writeFileSync(path.join(seeded, "default.json"), JSON.stringify({ ...emptyMemory(), revision: 3, lastUpdated: "2026-01-01T00:00:00.000Z", facts: [SEEDED] }));
    },
  },
);
let a: GatewayProcess;
let b: GatewayProcess;
let dir: string;
beforeAll(() => {
  [a, b] = cluster.gateways;
  dir = cluster.dir;
});

type Memory = { revision: number; facts: { id: string; content: string; category: string }[] };
const send = (g: GatewayProcess, method: string, url: string, body?: unknown) =>
  fetch(`${g.url}${url}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
const memoryOf = async (g: GatewayProcess): Promise<Memory> => (await send(g, "GET", "/api/memory")).json();
const contents = (m: Memory) => m.facts.map((f) => f.content).sort();
/** The memory files a home holds (none once memory lives in PostgreSQL, apart from imported ones). */
const memoryFiles = (home: string) => {
  const root = path.join(dir, home, "users");
  return existsSync(root) ? readdirSync(root, { recursive: true }).map(String).filter((f) => f.endsWith(".json")) : [];
};

describe("memory in PostgreSQL, two processes with separate homes", () => {
  it("imports home A's memory files once: process B (another home) reads them, revision kept", async () => {
    const seen = await memoryOf(b);
    // Other tests of this file may have written since (any order): the import kept revision 3, so it is at least that.
    expect(seen.revision).toBeGreaterThanOrEqual(3);
    expect(seen.facts).toContainEqual(expect.objectContaining({ id: SEEDED.id, content: SEEDED.content }));
    expect(existsSync(path.join(dir, "home-0", ".memory-imported-to-postgres"))).toBe(true);
    expect(memoryFiles("home-1")).toEqual([]);
  });

  it("loses no fact when both processes add, edit and delete facts of one user at once", async () => {
    const before = await memoryOf(a);
    const added = await Promise.all(Array.from({ length: 24 }, (_, i) => send(i % 2 ? b : a, "POST", "/api/memory/facts", { content: `shared fact ${i}` })));
    expect(added.map((r) => r.status)).toEqual(Array(24).fill(200));
    const afterAdds = await memoryOf(b);
    expect(afterAdds.revision).toBe(before.revision + 24);
    const ids = new Map(afterAdds.facts.map((f) => [f.content, f.id]));
    // Edits through A and deletions through B, interleaved.
    const changes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 ? send(b, "DELETE", `/api/memory/facts/${ids.get(`shared fact ${i}`)}`) : send(a, "PATCH", `/api/memory/facts/${ids.get(`shared fact ${i}`)}`, { content: `edited fact ${i}`, category: "goal" }),
      ),
    );
    expect(changes.map((r) => r.status)).toEqual(Array(12).fill(200));
    const final = await memoryOf(a);
    expect(final.revision).toBe(before.revision + 36);
    const expected = [
      ...contents(before),
      ...Array.from({ length: 12 }, (_, i) => (i % 2 ? [] : [`edited fact ${i}`])).flat(),
      ...Array.from({ length: 12 }, (_, i) => `shared fact ${i + 12}`),
    ].sort();
    expect(contents(final)).toEqual(expected);
    expect(final.facts.filter((f) => f.content.startsWith("edited")).every((f) => f.category === "goal")).toBe(true);
    expect(contents(await memoryOf(b))).toEqual(expected);
  });

  it("keeps every fact the agent learns after runs on both processes while the web app adds facts too", async () => {
    const run = async (g: GatewayProcess, i: number) => {
      const res = await send(g, "POST", "/runs/wait", { input: { messages: [{ role: "user", content: `I like fruit number ${i}.` }] } });
      expect(res.status, await res.clone().text()).toBe(200);
    };
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => run(i % 2 ? b : a, i)),
      ...Array.from({ length: 8 }, (_, i) => send(i % 2 ? a : b, "POST", "/api/memory/facts", { content: `typed fact ${i}` }).then((r) => expect(r.status).toBe(200))),
    ]);
    const learned = Array.from({ length: 8 }, (_, i) => `I like fruit number ${i}`);
    const typed = Array.from({ length: 8 }, (_, i) => `typed fact ${i}`);
    await until(async () => {
      const facts = contents(await memoryOf(a));
      return [...learned, ...typed].every((c) => facts.includes(c));
    }, 60_000);
    const seenByB = contents(await memoryOf(b));
    for (const c of [...learned, ...typed]) expect(seenByB).toContain(c);
    expect(seenByB.filter((c) => c === "I like fruit number 0")).toHaveLength(1);
    expect(memoryFiles("home-1")).toEqual([]);
  });

  it("imports a home's files once: revisions kept, a document PostgreSQL holds already wins, the marker stops a second import", async () => {
    const root = path.join(dir, "home-import");
    const write = (user: string, revision: number, content: string) => {
      mkdirSync(path.join(root, "users", user, "memory"), { recursive: true });
      const doc = { ...emptyMemory(), revision, lastUpdated: "2026-02-01T00:00:00.000Z", facts: [{ ...SEEDED, content }] };
      writeFileSync(path.join(root, "users", user, "memory", "default.json"), JSON.stringify(doc));
    };
    write("imp-1", 7, "from the file of imp-1");
    write("imp-2", 2, "from the file of imp-2");
    const pool = new pg.Pool({ connectionString: cluster.dbUrl });
    try {
      const store = new PgMemoryStore(pool);
      await store.update("imp-2", "default", (doc) => void doc.facts.push({ ...SEEDED, content: "already in PostgreSQL" }));
      expect(await store.adoptFiles(root)).toBe(1);
      expect((await store.read("imp-1", "default"))!.doc).toMatchObject({ revision: 7, facts: [{ content: "from the file of imp-1" }] });
      expect((await store.read("imp-2", "default"))!.doc).toMatchObject({ revision: 1, facts: [{ content: "already in PostgreSQL" }] });
      write("imp-3", 1, "written after the import");
      expect(await store.adoptFiles(root)).toBe(0);
      expect(await store.read("imp-3", "default")).toBeNull();
    } finally {
      await pool.end();
    }
  });

  it("answers 409 while another writer holds the document, and a stale expected revision is refused", async () => {
    const holder = new pg.Client({ connectionString: cluster.dbUrl });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT revision FROM memory_documents WHERE owner_id = 'default' AND scope = 'default' FOR UPDATE");
      const res = await send(b, "POST", "/api/memory/facts", { content: "blocked by the lock" });
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ detail: "Memory changed concurrently; reload and retry." });
      await holder.query("ROLLBACK");
    } finally {
      await holder.end();
    }
    expect(contents(await memoryOf(a))).not.toContain("blocked by the lock");

    const pool = new pg.Pool({ connectionString: cluster.dbUrl });
    try {
      const store = new PgMemoryStore(pool);
      const current = (await store.read("default", "default"))!.doc!;
      await expect(store.save("default", "default", { ...current, facts: [] }, current.revision! - 1)).rejects.toBeInstanceOf(MemoryConflictError);
      expect((await memoryOf(b)).revision).toBe(current.revision);
      const saved = await store.save("default", "default", current, current.revision);
      expect(saved.revision).toBe(current.revision! + 1);
    } finally {
      await pool.end();
    }
  });
});
