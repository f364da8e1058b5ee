// The console's per-user run queries (persistence/owner-runs.ts) on PostgreSQL against a real server, and the same
// cases on SQLite: both stores answer alike (scoping by thread owner, order, paging, status filter, counters, window).
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { migratePostgres, PgRunStore, PgThreadStore } from "../../src/runtime/persistence/postgres/pg-stores.js";
import type { RunRecord, RunRepository, ThreadRepository } from "../../src/runtime/persistence/repositories.js";
import { RunStore } from "../../src/runtime/persistence/sqlite/run-store.js";
import { ThreadStore } from "../../src/runtime/persistence/sqlite/thread-store.js";
import { createTestDatabase } from "../support/services.js";

let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let pool: pg.Pool | undefined;
let sqlite: Database.Database | undefined;
beforeEach(() => {
  db = undefined;
  pool = undefined;
  sqlite = undefined;
});
afterEach(async () => {
  await pool?.end();
  await db?.drop();
  sqlite?.close();
});

async function postgresStores(): Promise<{ threads: ThreadRepository; runs: RunRepository }> {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on("error", () => undefined);
  await migratePostgres(pool);
  return { threads: new PgThreadStore(pool), runs: new PgRunStore(pool) };
}

function sqliteStores(): { threads: ThreadRepository; runs: RunRepository } {
  sqlite = new Database(":memory:");
  return { threads: new ThreadStore(sqlite), runs: new RunStore(sqlite) };
}

const run = (id: string, threadId: string, status: RunRecord["status"], at: string, tokens: [number, number], model?: string): RunRecord => ({
  run_id: id,
  thread_id: threadId,
  assistant_id: "lead_agent",
  status,
  metadata: model ? { model_name: model } : {},
  kwargs: { input: null, config: {} },
  multitask_strategy: "reject",
  created_at: at,
  updated_at: at,
  total_input_tokens: tokens[0],
  total_output_tokens: tokens[1],
  total_tokens: tokens[0] + tokens[1],
  ...(status === "error" ? { error: "boom" } : {}),
});

async function seed({ threads, runs }: { threads: ThreadRepository; runs: RunRepository }): Promise<void> {
  await threads.create("ta", {}, "alice");
  await threads.create("tb", {}, "alice");
  await threads.create("tc", {}, "alice");
  await threads.create("tz", {}, "bob");
  // Same created_at for r3/r4: insertion order breaks the tie (the later insert first).
  await runs.save(run("r1", "ta", "success", "2026-01-01T10:00:00.000Z", [10, 5], "m1"));
  await runs.save(run("r2", "tb", "error", "2026-01-02T10:00:00.000Z", [0, 0]));
  await runs.save(run("r3", "ta", "running", "2026-01-03T10:00:00.000Z", [1, 1], "m2"));
  await runs.save(run("r4", "tb", "timeout", "2026-01-03T10:00:00.000Z", [2, 2], "m1"));
  await runs.save(run("z1", "tz", "success", "2026-01-04T10:00:00.000Z", [100, 100], "m1"));
}

const cases: [string, () => Promise<{ threads: ThreadRepository; runs: RunRepository }>][] = [
  ["PostgreSQL", postgresStores],
  ["SQLite", async () => sqliteStores()],
];

describe.each(cases)("console run queries on %s", (_name, open) => {
  it("lists one owner's runs across threads, newest first, paged and filtered by status", async () => {
    const stores = await open();
    await seed(stores);
    const ids = async (page: Partial<{ limit: number; offset: number; status: string }>) =>
      (await stores.runs.listByOwner({ ownerId: "alice", limit: 10, offset: 0, ...page })).map((r) => r.run_id);
    expect(await ids({})).toEqual(["r4", "r3", "r2", "r1"]);
    expect(await ids({ limit: 2, offset: 1 })).toEqual(["r3", "r2"]);
    expect(await ids({ status: "error" })).toEqual(["r2"]);
    const [latest] = await stores.runs.listByOwner({ ownerId: "alice", limit: 1, offset: 0 });
    expect(latest).toMatchObject({ run_id: "r4", thread_id: "tb", status: "timeout", total_tokens: 4, metadata: { model_name: "m1" } });
    expect((await stores.runs.listByOwner({ ownerId: "bob", limit: 10, offset: 0 })).map((r) => r.run_id)).toEqual(["z1"]);
    expect(await stores.runs.listByOwner({ ownerId: "carol", limit: 10, offset: 0 })).toEqual([]);
  });

  it("counts an owner's runs by state, their tokens and their threads", async () => {
    const stores = await open();
    await seed(stores);
    expect(await stores.runs.statsByOwner("alice")).toEqual({ total_runs: 4, active_runs: 1, failed_runs: 2, total_tokens: 21, total_threads: 3 });
    expect(await stores.runs.statsByOwner("bob")).toEqual({ total_runs: 1, active_runs: 0, failed_runs: 0, total_tokens: 200, total_threads: 1 });
    expect(await stores.runs.statsByOwner("carol")).toEqual({ total_runs: 0, active_runs: 0, failed_runs: 0, total_tokens: 0, total_threads: 0 });
  });

  it("reads usage rows of an owner's runs since a time, oldest first", async () => {
    const stores = await open();
    await seed(stores);
    const rows = await stores.runs.usageByOwner("alice", "2026-01-02T00:00:00.000Z");
    expect(rows.map((r) => r.run_id)).toEqual(["r2", "r3", "r4"]);
    expect(rows[0]).toEqual({ run_id: "r2", created_at: "2026-01-02T10:00:00.000Z", model_name: null, total_input_tokens: 0, total_output_tokens: 0, total_tokens: 0 });
    expect(rows[1]).toEqual({ run_id: "r3", created_at: "2026-01-03T10:00:00.000Z", model_name: "m2", total_input_tokens: 1, total_output_tokens: 1, total_tokens: 2 });
    expect((await stores.runs.usageByOwner("alice")).map((r) => r.run_id)).toEqual(["r1", "r2", "r3", "r4"]);
  });
});
