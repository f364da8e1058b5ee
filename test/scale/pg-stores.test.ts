import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { migratePostgres, PgRunStore, PgThreadStore } from "../../src/runtime/persistence/postgres/pg-stores.js";
import type { RunRecord } from "../../src/runtime/persistence/repositories.js";
import { createTestDatabase } from "../support/services.js";

// The PostgreSQL repositories against a real server: migrations, and the same semantics as the SQLite stores.
// Each case gets its own empty database, so none sees another's rows or depends on another having migrated it.
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
beforeEach(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 8 });
  // DROP DATABASE ... WITH (FORCE) ends connections the pool is still closing; that is expected here.
  pool.on("error", () => undefined);
});
afterEach(async () => {
  await pool?.end();
  await db?.drop();
});

/** The pool on this case's database, with the schema migrated. */
async function migrated(): Promise<pg.Pool> {
  await migratePostgres(pool);
  return pool;
}

const run = (id: string, threadId: string, status: RunRecord["status"], at: string): RunRecord => ({
  run_id: id,
  thread_id: threadId,
  assistant_id: "lead_agent",
  status,
  metadata: { k: 1 },
  kwargs: { input: { messages: [] }, config: {} },
  multitask_strategy: "reject",
  created_at: at,
  updated_at: at,
});

describe("PostgreSQL stores", () => {
  it("applies migrations once, also when several processes start together", async () => {
    await Promise.all([migratePostgres(pool), migratePostgres(pool), migratePostgres(pool)]);
    await migratePostgres(pool);
    const { rows } = await pool.query("SELECT version FROM deerflow_migrations ORDER BY version");
    expect(rows).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }]);
  });

  it("creates threads idempotently, strips server-owned metadata and merges patches", async () => {
    const threads = new PgThreadStore(await migrated());
    const created = await threads.create("t-1", { a: 1, user_id: "mallory" });
    expect(created).toMatchObject({ thread_id: "t-1", status: "idle", metadata: { a: 1 } });
    expect(created.metadata).not.toHaveProperty("user_id");
    expect(await threads.create("t-1", { a: 2 })).toEqual(created);
    await Promise.all([threads.patchMetadata("t-1", { b: 2 }), threads.patchMetadata("t-1", { c: 3 })]);
    expect((await threads.get("t-1"))!.metadata).toEqual({ a: 1, b: 2, c: 3 });
    expect(await threads.patchMetadata("nope", { x: 1 })).toBeNull();
    expect(created.owner_id).toBe("default");
    await threads.create("t-2", {}, "alice");
    expect(await threads.getOwned("t-2", "alice")).toMatchObject({ thread_id: "t-2", owner_id: "alice" });
    expect(await threads.getOwned("t-2", "bob")).toBeNull();
    expect((await threads.search({ ownerId: "alice", limit: 10, offset: 0 })).map((t) => t.thread_id)).toEqual(["t-2"]);
    expect(await threads.delete("t-1")).toBe(true);
    expect(await threads.delete("t-1")).toBe(false);
  });

  it("creates a run's thread busy once: a second creation, or another user's, changes nothing", async () => {
    const threads = new PgThreadStore(await migrated());
    const results = await Promise.all([threads.createForRun("run-t", "alice"), threads.createForRun("run-t", "bob")]);
    expect(results.sort()).toEqual([false, true]);
    const stored = (await threads.get("run-t"))!;
    expect(stored).toMatchObject({ status: "busy", metadata: {} });
    await threads.setStatus("run-t", "idle");
    expect(await threads.createForRun("run-t", stored.owner_id)).toBe(false);
    expect(await threads.get("run-t")).toMatchObject({ status: "idle", owner_id: stored.owner_id });
  });

  it("searches by metadata with JSON type equality, status and ids, sorted and paged", async () => {
    const threads = new PgThreadStore(await migrated());
    await threads.create("s-1", { n: 1, tag: { x: [1] } });
    await threads.create("s-2", { n: "1" });
    await threads.create("s-3", { n: 1 });
    await threads.setStatus("s-3", "busy");
    const ids = (q: Parameters<PgThreadStore["search"]>[0]) => threads.search(q).then((r) => r.map((t) => t.thread_id));
    expect(await ids({ metadata: { n: 1 }, limit: 10, offset: 0, sortBy: "thread_id", sortOrder: "asc" })).toEqual(["s-1", "s-3"]);
    expect(await ids({ metadata: { n: "1" }, limit: 10, offset: 0 })).toEqual(["s-2"]);
    expect(await ids({ metadata: { tag: { x: [1] } }, limit: 10, offset: 0 })).toEqual(["s-1"]);
    expect(await ids({ status: "busy", limit: 10, offset: 0 })).toEqual(["s-3"]);
    expect(await ids({ ids: ["s-2", "s-3"], limit: 10, offset: 0, sortBy: "thread_id", sortOrder: "desc" })).toEqual(["s-3", "s-2"]);
    expect(await ids({ ids: ["s-1", "s-2", "s-3"], limit: 1, offset: 1, sortBy: "thread_id", sortOrder: "asc" })).toEqual(["s-2"]);
    expect(await threads.resetBusy()).toBe(1);
    expect((await threads.get("s-3"))!.status).toBe("idle");
  });

  it("stores runs, lists them newest first with a status filter, and interrupts only the given orphans", async () => {
    const runs = new PgRunStore(await migrated());
    await runs.save(run("r-1", "T", "success", "2026-01-01T00:00:01.000Z"));
    await runs.save(run("r-2", "T", "running", "2026-01-01T00:00:02.000Z"));
    await runs.save(run("r-3", "T", "pending", "2026-01-01T00:00:03.000Z"));
    await runs.save({ ...run("r-1", "T", "error", "2026-01-01T00:00:01.000Z"), error: "boom" });
    expect(await runs.get("r-1")).toMatchObject({ status: "error", error: "boom", metadata: { k: 1 } });
    // kwargs are written with the row; a status save does not rewrite them.
    await runs.save({ ...run("r-1", "T", "error", "2026-01-01T00:00:01.000Z"), error: "boom", kwargs: { input: "changed", config: {} } });
    expect((await runs.get("r-1"))!.kwargs).toEqual({ input: { messages: [] }, config: {} });
    // The Run JSON counters are stored with the run (all zero for a record saved without them).
    await runs.save({ ...run("r-c", "C", "success", "2026-01-01T00:00:04.000Z"), total_tokens: 36, llm_call_count: 2, stop_reason: "loop_capped" });
    expect(await runs.get("r-c")).toMatchObject({ total_tokens: 36, llm_call_count: 2, stop_reason: "loop_capped", message_count: 0 });
    expect(await runs.get("r-2")).toMatchObject({ total_tokens: 0, stop_reason: null });
    await runs.deleteThread("C");
    expect((await runs.get("r-2"))!).not.toHaveProperty("error");
    expect((await runs.list("T")).map((r) => r.run_id)).toEqual(["r-3", "r-2", "r-1"]);
    expect((await runs.list("T", { status: "running" })).map((r) => r.run_id)).toEqual(["r-2"]);
    expect((await runs.list("T", { limit: 1, offset: 1 })).map((r) => r.run_id)).toEqual(["r-2"]);
    expect(await runs.interruptOrphans(["r-2"])).toBe(1);
    expect((await runs.get("r-2"))!.status).toBe("interrupted");
    expect((await runs.get("r-3"))!.status).toBe("pending");
    expect(await runs.interruptOrphans()).toBe(1);
    await runs.deleteThread("T");
    expect(await runs.list("T")).toEqual([]);
  });
});
