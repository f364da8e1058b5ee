import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseAppConfig } from "../../src/config/schema.js";
import { GroupCommit } from "../../src/runtime/persistence/sqlite/group-commit.js";
import { UsageLedger } from "../../src/runtime/limits/usage-ledger.js";
import { openPersistence } from "../../src/runtime/persistence/persistence.js";
import type { RunRecord } from "../../src/runtime/persistence/repositories.js";
import { RunStore } from "../../src/runtime/persistence/sqlite/run-store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { ThreadStore } from "../../src/runtime/persistence/sqlite/thread-store.js";

const homes: string[] = [];
const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0).reverse()) close();
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

/** Stores on one file with a shared write queue, and a second connection that sees only what is committed. */
function open() {
  const home = mkdtempSync(path.join(os.tmpdir(), "df-group-commit-stores-"));
  homes.push(home);
  const file = path.join(home, "gateway.sqlite");
  const db = openSqlite(file);
  const transactions = vi.spyOn(db, "transaction");
  const commits = new GroupCommit(db);
  const threads = new ThreadStore(db, commits);
  const runs = new RunStore(db, commits);
  const reader = new Database(file, { readonly: true });
  closers.push(() => db.close(), () => reader.close());
  const committed = (sql: string, ...args: unknown[]) => (reader.prepare(sql).get(...args) as { n: number }).n;
  return { db, commits, threads, runs, committed, transactions: () => transactions.mock.calls.length };
}

/** Lets promise continuations run, but not the queue's `setImmediate` commit. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

function record(runId: string, threadId: string, status: RunRecord["status"]): RunRecord {
  const now = new Date().toISOString();
  return { run_id: runId, thread_id: threadId, assistant_id: "lead_agent", status, metadata: {}, kwargs: { input: { messages: [] }, config: {} }, multitask_strategy: "reject", created_at: now, updated_at: now };
}

describe("GroupCommit", () => {
  it("commits a turn's writes in one transaction, in order, answering each with its result after the commit", async () => {
    const { db, commits, committed, transactions } = open();
    db.exec("CREATE TABLE log (n INTEGER)");
    const before = transactions();
    const answers = [1, 2, 3].map((n) => commits.run(() => db.prepare("INSERT INTO log VALUES (?)").run(n).changes + n * 10));
    await microtasks();
    expect(committed("SELECT count(*) AS n FROM log")).toBe(0);
    expect(await Promise.all(answers)).toEqual([11, 21, 31]);
    expect(committed("SELECT group_concat(n) AS n FROM log")).toBe("1,2,3");
    expect(transactions() - before).toBe(1);
  });

  it("rejects only the write that fails; its neighbours in the group are committed", async () => {
    const { db, commits, committed } = open();
    db.exec("CREATE TABLE once (k TEXT PRIMARY KEY)");
    const outcomes = await Promise.allSettled([
      commits.run(() => db.prepare("INSERT INTO once VALUES ('a')").run()),
      commits.run(() => db.prepare("INSERT INTO once VALUES ('a')").run()),
      commits.run(() => {
        throw new Error("not SQL at all");
      }),
      commits.run(() => db.prepare("INSERT INTO once VALUES ('b')").run()),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
    expect(committed("SELECT count(*) AS n FROM once")).toBe(2);
  });
});

describe("run and thread stores on a group commit", () => {
  it("answer writes after their commit, and reads see what was queued before them", async () => {
    const { threads, runs, committed } = open();
    const created = threads.createForRun("t1", "alice");
    const saved = runs.save(record("r1", "t1", "pending"));
    await microtasks();
    expect(committed("SELECT count(*) AS n FROM runs")).toBe(0);
    // A read commits the queue first.
    expect(await runs.get("r1")).toMatchObject({ status: "pending", thread_id: "t1" });
    expect(committed("SELECT count(*) AS n FROM runs")).toBe(1);
    expect(await threads.getOwned("t1", "alice")).toMatchObject({ status: "busy" });
    expect(await created).toBe(true);
    await saved;
  });

  it("store the record as it was when saved, though the caller changes it while the write waits", async () => {
    const { runs, committed } = open();
    const r = record("r1", "t1", "pending");
    const saved = runs.save(r);
    r.status = "running";
    await saved;
    expect(committed("SELECT count(*) AS n FROM runs WHERE status = 'pending'")).toBe(1);
  });

  it("keep concurrent calls on one thread in call order: one creation wins, every metadata patch lands", async () => {
    const { threads, runs } = open();
    const [first, second] = await Promise.all([threads.createForRun("t", "alice"), threads.createForRun("t", "bob")]);
    expect([first, second]).toEqual([true, false]);
    const patched = await Promise.all([threads.patchMetadata("t", { a: 1 }), threads.patchMetadata("t", { b: 2 }), threads.patchMetadata("missing", { c: 3 })]);
    expect(patched[1]?.metadata).toEqual({ a: 1, b: 2 });
    expect(patched[2]).toBeNull();
    await Promise.all([runs.save(record("r", "t", "pending")), runs.save(record("r", "t", "running")), threads.setStatus("t", "idle")]);
    expect(await runs.get("r")).toMatchObject({ status: "running" });
    expect(await threads.get("t")).toMatchObject({ status: "idle", owner_id: "alice" });
    expect(await threads.delete("t")).toBe(true);
    expect(await threads.delete("t")).toBe(false);
  });

  it("group token-usage additions with the run rows, and a usage read sees the additions queued before it", async () => {
    const { db, commits, runs, committed, transactions } = open();
    const ledger = new UsageLedger(db, commits);
    const before = transactions();
    const writes = [runs.save(record("r1", "t1", "running")), ledger.add("alice", { input: 11, output: 7 }, "2026-01-01"), ledger.add("alice", { input: 3.4, output: -2 }, "2026-01-01")];
    await microtasks();
    expect(committed("SELECT count(*) AS n FROM token_usage")).toBe(0);
    await Promise.all(writes);
    expect(transactions() - before).toBe(1);
    expect(committed("SELECT input_tokens + output_tokens AS n FROM token_usage WHERE user_id = 'alice'")).toBe(21);
    const queued = ledger.add("alice", { input: 1, output: 1 }, "2026-01-01");
    // A quota check reads in the same turn as the addition: it commits the queue first.
    expect(ledger.get("alice", "2026-01-01")).toEqual({ day: "2026-01-01", input_tokens: 15, output_tokens: 8, total_tokens: 23, model_calls: 3 });
    expect(ledger.recent("bob", 7)).toEqual([]);
    await queued;
  });

  it("reject a token-usage addition the database refuses, and keep the rest of its group", async () => {
    const { db, commits, runs, committed } = open();
    const ledger = new UsageLedger(db, commits);
    db.exec("CREATE TRIGGER no_mallory BEFORE INSERT ON token_usage WHEN NEW.user_id = 'mallory' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const outcomes = await Promise.allSettled([ledger.add("mallory", { input: 1, output: 1 }), runs.save(record("r1", "t1", "running")), ledger.add("alice", { input: 1, output: 1 })]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect(committed("SELECT count(*) AS n FROM token_usage")).toBe(1);
    expect(committed("SELECT count(*) AS n FROM runs")).toBe(1);
  });

  it("are committed, with the checkpoints queued beside them, when the gateway's persistence closes", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "df-group-commit-persistence-"));
    homes.push(home);
    const persistence = await openPersistence(parseAppConfig({ models: [] }), home);
    const reader = new Database(persistence.location, { readonly: true });
    try {
      const writes = [];
      for (let i = 0; i < 10; i++) {
        writes.push(
          persistence.threads.createForRun(`t${i}`, "alice"),
          persistence.runs.save(record(`r${i}`, `t${i}`, "pending")),
          persistence.checkpointer.put({ configurable: { thread_id: `t${i}`, checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(i) }, { source: "input", step: -1, parents: {} }, {}),
        );
      }
      await microtasks();
      expect((reader.prepare("SELECT count(*) AS n FROM runs").get() as { n: number }).n).toBe(0);
      const closing = persistence.close();
      await Promise.all(writes);
      await closing;
      expect((reader.prepare("SELECT count(*) AS n FROM runs").get() as { n: number }).n).toBe(10);
      expect((reader.prepare("SELECT count(*) AS n FROM threads WHERE status = 'busy'").get() as { n: number }).n).toBe(10);
      expect((reader.prepare("SELECT count(*) AS n FROM checkpoints").get() as { n: number }).n).toBe(10);
    } finally {
      reader.close();
    }
  });
});
