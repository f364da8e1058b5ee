import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PgTaskStore } from "../../src/runtime/scheduler/pg-task-store.js";
import type { ScheduledTask } from "../../src/runtime/scheduler/task-store.js";
import { createTestDatabase } from "../support/services.js";

// The claim under contention: eight pools (as eight processes) claim the same 60 due tasks at once, twenty rounds
// of racing claims; every task is claimed by exactly one claimer and the budget holds.
let db: Awaited<ReturnType<typeof createTestDatabase>>;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  for (let i = 0; i < 8; i++) pools.push(new pg.Pool({ connectionString: db.url, max: 2 }));
  await new PgTaskStore(pools[0]).migrate();
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await db?.drop();
});

const task = (i: number): ScheduledTask => ({
  id: `task-${i}`, user_id: `u${i % 3}`, thread_id: null, context_mode: "fresh_thread_per_run", assistant_id: "lead_agent", model_name: null,
  title: `t${i}`, prompt: "p", schedule_type: "once", schedule_spec: { run_at: "2030-01-01T00:00:00Z" }, timezone: "UTC", status: "enabled",
  overlap_policy: "skip", next_run_at: "2030-01-01T00:00:00.000Z", last_run_at: null, last_run_id: null, last_thread_id: null, last_error: null,
  run_count: 0, created_at: "2029-12-31T00:00:00.000Z", updated_at: "2029-12-31T00:00:00.000Z",
});

it("gives each due task to exactly one of several concurrent claimers, within max_concurrent_runs", async () => {
  const stores = pools.map((p) => new PgTaskStore(p));
  for (let i = 0; i < 60; i++) expect(await stores[0].insertTask(task(i), 1000)).toBe(true);
  const claimedBy = new Map<string, string[]>();
  const now = "2030-01-01T00:00:01.000Z";
  for (let round = 0; round < 20; round++) {
    const results = await Promise.all(stores.map((s, i) => s.claimDue(now, `owner-${i}`, "2030-01-01T00:02:00.000Z", 32)));
    results.forEach((claimed, i) => claimed.forEach((t) => claimedBy.set(t.id, [...(claimedBy.get(t.id) ?? []), `owner-${i}`])));
  }
  // 32 at most (the budget counts live claims), none twice; the rest stay unclaimed until leases expire.
  expect(claimedBy.size).toBe(32);
  expect([...claimedBy.values()].filter((owners) => owners.length > 1)).toEqual([]);
});
