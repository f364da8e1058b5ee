import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunEventStore } from "../../src/runtime/persistence/run-event-store.js";
import { PgRunEventStore } from "../../src/runtime/persistence/postgres/pg-run-event-store.js";
import { GroupCommit } from "../../src/runtime/persistence/sqlite/group-commit.js";
import { SqliteRunEventStore } from "../../src/runtime/persistence/sqlite/run-event-store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { RunEventLog } from "../../src/runtime/stream/run-event-log.js";
import { createTestDatabase } from "../support/services.js";
import { until } from "../support/wait.js";

let home: string;
let dir: string;
beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "run-events-"));
  dir = path.join(home, "data", "run-events");
  mkdirSync(path.join(home, "data"), { recursive: true });
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

let pgDb: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
beforeAll(async () => {
  pgDb = await createTestDatabase();
  pool = new pg.Pool({ connectionString: pgDb.url, max: 4 });
});
afterAll(async () => {
  await pool?.end();
  await pgDb?.drop();
});

/** A store of each kind the gateway opens: the gateway SQLite file with its group commit, and PostgreSQL. */
const backends: [string, () => Promise<{ store: RunEventStore; reopen: () => RunEventStore; close: () => void }>][] = [
  [
    "sqlite",
    async () => {
      const file = path.join(home, "data", "deerflow.sqlite");
      const db = openSqlite(file);
      const second = openSqlite(file);
      return { store: new SqliteRunEventStore(db, new GroupCommit(db)), reopen: () => new SqliteRunEventStore(second), close: () => (db.close(), second.close()) };
    },
  ],
  [
    "postgres",
    async () => {
      await pool.query("DROP TABLE IF EXISTS run_events");
      const store = new PgRunEventStore(pool);
      await store.migrate();
      await store.migrate(); // idempotent
      return { store, reopen: () => new PgRunEventStore(pool), close: () => undefined };
    },
  ],
];

describe.each(backends)("RunEventLog on %s", (_name, open) => {
  it("keeps a finished run's events in the gateway database, read back by another connection, with upstream's filters", async () => {
    const { store, reopen, close } = await open();
    const log = new RunEventLog(store);
    log.record("run-1", "metadata", { run_id: "run-1" });
    log.record("run-1", "values", { messages: [] });
    log.record("run-1", "messages", [{ content: "tok" }]);
    log.record("run-1", "updates", { model_request: { n: 1 } });
    log.append("run-1", { event_type: "middleware:title", category: "middleware", content: { action: "generate_title" }, metadata: { task_id: "t1" } });
    log.append("run-1", { event_type: "middleware:loop_detection", category: "middleware", content: "x\u0000y", metadata: {} });
    log.record("run-1", "error", { message: "boom" });
    // Buffered rows are listed before they are written.
    expect((await log.list("run-1")).map((e) => e.event_type)).toEqual(["metadata", "updates", "middleware:title", "middleware:loop_detection", "error"]);
    log.finish("run-1");
    await log.drain();

    const other = new RunEventLog(reopen());
    const events = await other.list("run-1");
    expect(events.map((e) => [e.seq, e.event_type, e.category])).toEqual([
      [1, "metadata", "lifecycle"],
      [2, "updates", "update"],
      [3, "middleware:title", "middleware"],
      [4, "middleware:loop_detection", "middleware"],
      [5, "error", "error"],
    ]);
    expect(events[1].content).toEqual({ model_request: { n: 1 } });
    expect(events[3].content).toBe("x\u0000y");
    expect(events[0].created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect((await other.list("run-1", { eventTypes: ["updates", "error"] })).map((e) => e.seq)).toEqual([2, 5]);
    expect((await other.list("run-1", { eventTypes: ["middleware:*"] })).map((e) => e.seq)).toEqual([3, 4]);
    expect((await other.list("run-1", { eventTypes: ["middleware_*"] })).map((e) => e.seq)).toEqual([]);
    expect((await other.list("run-1", { afterSeq: 2, limit: 1 })).map((e) => e.seq)).toEqual([3]);
    expect((await other.list("run-1", { taskId: "t1" })).map((e) => e.seq)).toEqual([3]);
    expect(await other.list("other")).toEqual([]);
    expect(await other.list("../escape")).toEqual([]);
    await other.remove(["run-1"]);
    expect(await log.list("run-1")).toEqual([]);
    close();
  });

  it("writes a long run's events in batches as they accumulate, and a resumed run continues the numbering", async () => {
    const { store, reopen, close } = await open();
    const log = new RunEventLog(store);
    for (let i = 0; i < 150; i++) log.record("long", "custom", { i });
    await until(async () => (await new RunEventLog(reopen()).list("long")).length === 128);
    log.finish("long");
    await log.drain();
    expect((await new RunEventLog(reopen()).list("long")).map((e) => (e.content as { i: number }).i)).toEqual([...Array(150).keys()]);
    // Another process resumes the run: its events follow the stored ones instead of replacing them.
    const resumed = new RunEventLog(reopen());
    await resumed.reopen("long");
    resumed.append("long", { event_type: "run.start", category: "trace", content: {}, metadata: {} });
    resumed.finish("long");
    await resumed.drain();
    const all = await log.list("long", { limit: 2000 });
    expect(all).toHaveLength(151);
    expect(all.at(-1)).toMatchObject({ seq: 151, event_type: "run.start" });
    close();
  });
});

describe("RunEventLog: earlier versions' logs", () => {
  it("still reads the JSON Lines file and the per-process database an earlier version wrote", async () => {
    mkdirSync(dir, { recursive: true });
    const row = { seq: 1, run_id: "old-run", event_type: "metadata", category: "lifecycle", content: { a: 1 }, metadata: {}, created_at: "2026-01-01T00:00:00.000Z" };
    writeFileSync(path.join(dir, "old-run.jsonl"), `${JSON.stringify(row)}\n{"torn`);
    const old = openSqlite(`${dir}.sqlite`);
    old.exec("CREATE TABLE run_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, category TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID");
    old.prepare("INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?)").run("older", 1, "custom", "custom", '{"task_id":"t"}', "{}", row.created_at);
    old.close();
    const db = openSqlite(path.join(home, "data", "deerflow.sqlite"));
    const log = new RunEventLog(new SqliteRunEventStore(db), { legacyDir: dir });
    expect(await log.list("old-run")).toEqual([row]);
    expect((await log.list("older", { taskId: "t" })).map((e) => e.event_type)).toEqual(["custom"]);
    await log.remove(["old-run"]);
    expect(readdirSync(dir)).toEqual([]);
    await log.close();
    db.close();
  });
});

describe("RunEventLog: DeerFlow's subagent catalog events", () => {
  it("stores subagent.start/step/end beside the task_* custom chunks, in one batch, and filters steps by task", async () => {
    const db = openSqlite(path.join(home, "data", "deerflow.sqlite"));
    const log = new RunEventLog(new SqliteRunEventStore(db));
    log.record("r", "custom", { type: "task_started", task_id: "t1", description: "look" });
    log.record("r", "custom", { type: "task_running", task_id: "t1", message_index: 0, message: { type: "ai", content: "x".repeat(9000), tool_calls: [{ name: "bash", args: { command: "y".repeat(9000) } }] } });
    log.record("r", "custom", { type: "task_running", task_id: "t1", message_index: -1, message: { type: "ai" } });
    log.record("r", "custom", { type: "task_completed", task_id: "t1", result: "done", usage: { total_tokens: 3 } });
    log.finish("r");
    await log.drain();
    const steps = await log.list("r", { eventTypes: ["subagent.step"], taskId: "t1" });
    expect(steps).toHaveLength(1);
    expect(steps[0].content).toMatchObject({ task_id: "t1", message_index: 0, kind: "ai", truncated: true, tool_calls: [{ name: "bash", args_truncated: true }] });
    expect((steps[0].content as any).text).toHaveLength(8192);
    expect((await log.list("r", { eventTypes: ["subagent.end"] }))[0].content).toEqual({ task_id: "t1", status: "completed", usage: { total_tokens: 3 }, result: "done" });
    expect((await log.list("r", { eventTypes: ["subagent.start"] }))[0].content).toEqual({ task_id: "t1", description: "look" });
    await log.close();
    db.close();
  });
});
