import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseAppConfig } from "../../src/config/schema.js";
import { GroupCommitSqliteSaver } from "../../src/runtime/persistence/sqlite/group-commit-saver.js";
import { openPersistence } from "../../src/runtime/persistence/persistence.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { withStatementCache } from "../../src/runtime/persistence/sqlite/statement-cache.js";

const homes: string[] = [];
const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0).reverse()) close();
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function tempHome(): string {
  const home = mkdtempSync(path.join(os.tmpdir(), "df-group-commit-"));
  homes.push(home);
  return home;
}

/** A saver on a fresh file, a second (read-only) connection to see what is committed, and a transaction counter. */
function open(): { saver: GroupCommitSqliteSaver; db: Database.Database; file: string; committed(sql: string): number; transactions: () => number } {
  const file = path.join(tempHome(), "checkpoints.sqlite");
  const db = openSqlite(file);
  const spy = vi.spyOn(db, "transaction");
  const saver = new GroupCommitSqliteSaver(withStatementCache(db));
  // Creates the tables (the saver does so on first use), so the reader can open the file.
  void saver.getTuple({ configurable: { thread_id: "none" } });
  const reader = new Database(file, { readonly: true });
  closers.push(() => db.close(), () => reader.close());
  return {
    saver,
    db,
    file,
    committed: (sql) => (reader.prepare(sql).get() as { n: number }).n,
    transactions: () => spy.mock.calls.length,
  };
}

function checkpoint(step: number): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(step), channel_values: { count: step }, channel_versions: { count: step } };
}

/** Lets every promise continuation run, but no timer or `setImmediate` (the saver's commit). */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

const config = (threadId: string, checkpointId?: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: "", ...(checkpointId ? { checkpoint_id: checkpointId } : {}) } });

describe("GroupCommitSqliteSaver", () => {
  it("commits the checkpoints of concurrent runs in one transaction, and settles each put only after that commit", async () => {
    const { saver, committed, transactions } = open();
    const before = transactions();
    const settled: string[] = [];
    const checkpoints = Array.from({ length: 20 }, () => checkpoint(1));
    const puts = checkpoints.map((cp, i) =>
      saver.put(config(`t${i}`), cp, { source: "input", step: -1, parents: {} }).then((r) => {
        settled.push(r.configurable?.thread_id as string);
        // By the time a caller hears back, another connection sees its row.
        expect(committed(`SELECT count(*) AS n FROM checkpoints WHERE thread_id = '${String(r.configurable?.thread_id)}'`)).toBe(1);
        return r;
      }),
    );
    await microtasks();
    // Serialized and queued, not yet committed: nobody has been told it is stored.
    expect(committed("SELECT count(*) AS n FROM checkpoints")).toBe(0);
    expect(settled).toEqual([]);
    const results = await Promise.all(puts);
    expect(results[7]).toEqual(config("t7", checkpoints[7].id));
    expect(committed("SELECT count(*) AS n FROM checkpoints")).toBe(20);
    expect(transactions() - before).toBe(1);
  });

  it("lets a read see every write queued before it, committing them first", async () => {
    const { saver, committed } = open();
    const first = checkpoint(1);
    const put = saver.put(config("t"), first, { source: "loop", step: 0, parents: {} });
    await microtasks();
    const writes = saver.putWrites(config("t", first.id), [["messages", "hi"]], "task-1");
    await microtasks();
    const tuple = await saver.getTuple(config("t"));
    expect(tuple?.checkpoint.id).toBe(first.id);
    expect(tuple?.pendingWrites).toEqual([["task-1", "messages", "hi"]]);
    expect(committed("SELECT count(*) AS n FROM writes")).toBe(1);
    await Promise.all([put, writes]);
    const listed = [];
    for await (const t of saver.list(config("t"))) listed.push(t.checkpoint.id);
    expect(listed).toEqual([first.id]);
  });

  it("rejects only the call whose rows SQLite refuses; the others in its group are stored", async () => {
    const { saver, db, committed } = open();
    db.exec("CREATE TRIGGER poison BEFORE INSERT ON checkpoints WHEN NEW.thread_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END;");
    const outcomes = await Promise.allSettled(["a", "poison", "b"].map((t) => saver.put(config(t), checkpoint(1), { source: "input", step: -1, parents: {} })));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain("poisoned row");
    expect(committed("SELECT count(*) AS n FROM checkpoints")).toBe(2);
    // The saver goes on working after a failed group.
    await saver.put(config("c"), checkpoint(2), { source: "loop", step: 0, parents: {} });
    expect(committed("SELECT count(*) AS n FROM checkpoints WHERE thread_id = 'c'")).toBe(1);
  });

  it("keeps upstream's write rules: a task's first output stays, special channels (errors) take the latest", async () => {
    const { saver } = open();
    const cp = checkpoint(1);
    await saver.put(config("t"), cp, { source: "loop", step: 0, parents: {} });
    await saver.putWrites(config("t", cp.id), [["messages", "first"]], "task");
    await saver.putWrites(config("t", cp.id), [["messages", "second"]], "task");
    await saver.putWrites(config("t", cp.id), [["__error__", "boom 1"]], "failing");
    await saver.putWrites(config("t", cp.id), [["__error__", "boom 2"]], "failing");
    await saver.putWrites(config("t", cp.id), [], "nothing");
    const tuple = await saver.getTuple(config("t", cp.id));
    expect(tuple?.pendingWrites).toEqual(expect.arrayContaining([["task", "messages", "first"], ["failing", "__error__", "boom 2"]]));
    expect(tuple?.pendingWrites).toHaveLength(2);
    await expect(saver.putWrites({ configurable: { thread_id: "t" } }, [["messages", "x"]], "task")).rejects.toThrow(/checkpoint_id/);
    await expect(saver.put({ configurable: {} }, cp, { source: "loop", step: 0, parents: {} })).rejects.toThrow(/thread_id/);
  });

  it("writes the files upstream's SqliteSaver reads, and deletes a thread with what was queued for it", async () => {
    const { saver, file } = open();
    const cp = checkpoint(3);
    await saver.put(config("shared"), cp, { source: "loop", step: 2, parents: {} });
    await saver.putWrites(config("shared", cp.id), [["messages", { text: "kept" }]], "task");
    const upstream = new SqliteSaver(new Database(file));
    closers.push(() => upstream.db.close());
    const tuple = await upstream.getTuple(config("shared"));
    expect(tuple?.checkpoint.channel_values).toEqual({ count: 3 });
    expect(tuple?.metadata).toMatchObject({ step: 2 });
    expect(tuple?.pendingWrites).toEqual([["task", "messages", { text: "kept" }]]);

    const queued = saver.put(config("shared"), checkpoint(4), { source: "loop", step: 3, parents: {} });
    await microtasks();
    await saver.deleteThread("shared");
    await queued;
    expect(await saver.getTuple(config("shared"))).toBeUndefined();
  });

  it("checkpoints a compiled graph as upstream's SqliteSaver does: same state, same history, concurrent threads", async () => {
    const { saver } = open();
    const upstream = new SqliteSaver(new Database(path.join(tempHome(), "upstream.sqlite")));
    closers.push(() => upstream.db.close());
    const State = Annotation.Root({ total: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });
    const build = (checkpointer: SqliteSaver) =>
      new StateGraph(State)
        .addNode("add", () => ({ total: 1 }))
        .addEdge(START, "add")
        .addEdge("add", END)
        .compile({ checkpointer });
    const summary = async (checkpointer: SqliteSaver) => {
      const graph = build(checkpointer);
      const runs = Array.from({ length: 8 }, (_, i) => ({ configurable: { thread_id: `g${i}` } }));
      await Promise.all(runs.map((c) => graph.invoke({ total: 1 }, c)));
      await Promise.all(runs.map((c, i) => graph.invoke({ total: 10 * i }, c)));
      const states = await Promise.all(runs.map(async (c) => (await graph.getState(c)).values));
      const history = [];
      for await (const snapshot of graph.getStateHistory(runs[3])) history.push({ values: snapshot.values, next: snapshot.next, step: snapshot.metadata?.step, source: snapshot.metadata?.source });
      return { states, history };
    };
    const ours = await summary(saver);
    expect(ours.states[3]).toEqual({ total: 33 });
    expect(ours.history).toHaveLength(6);
    expect(ours).toEqual(await summary(upstream));
  });

  it("commits what is queued when the gateway's persistence closes", async () => {
    const home = tempHome();
    const appConfig = parseAppConfig({ models: [] });
    const persistence = await openPersistence(appConfig, home);
    const cp = checkpoint(1);
    const put = persistence.checkpointer.put(config("closing"), cp, { source: "input", step: -1, parents: {} }, {});
    await microtasks();
    await persistence.close();
    await put;
    const reopened = await openPersistence(appConfig, home);
    try {
      expect((await reopened.checkpointer.getTuple(config("closing")))?.checkpoint.id).toBe(cp.id);
    } finally {
      await reopened.close();
    }
  });
});
