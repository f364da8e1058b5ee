import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgRunSlots } from "../../../src/runtime/limits/pg-run-slots.js";
import { PgUsageLedger } from "../../../src/runtime/limits/pg-usage-ledger.js";
import { createTestDatabase } from "../../support/services.js";
import { until } from "../../support/wait.js";

// The shared limit stores on PostgreSQL, below the HTTP tests (test/scale/shared-limits-two-processes.test.ts): two
// pools on one database stand for two gateway processes. What HTTP cannot reach quickly: the atomic take under
// contention, a dead process's slots coming free, and how many statements the batched ledger sends.
let db: Awaited<ReturnType<typeof createTestDatabase>>;
const pools: pg.Pool[] = [];
const closers: (() => Promise<void>)[] = [];

function pool(): pg.Pool {
  const p = new pg.Pool({ connectionString: db.url, max: 10 });
  pools.push(p);
  return p;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const p = pool();
  await Promise.all([PgRunSlots.migrate(p), PgUsageLedger.migrate(p), PgRunSlots.migrate(pool()), PgUsageLedger.migrate(pool())]);
});
afterAll(async () => {
  for (const close of closers) await close();
  await Promise.all(pools.map((p) => p.end()));
  await db?.drop();
});

/** A pool that counts the statements sent through it. */
class CountingPool extends pg.Pool {
  statements = 0;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    this.statements++;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (super.query as (...a: any[]) => any).apply(this, args);
  }
}

function slots(leaseMs?: number): PgRunSlots {
  const s = new PgRunSlots(pool(), leaseMs);
  closers.push(() => s.close());
  return s;
}

describe("run slots on PostgreSQL", () => {
  it("concurrent takes through two processes (40, then 10 bursts of 20): exactly the cap is taken, and a release frees one for the other process", async () => {
    const [one, two] = [slots(), slots()];
    const takes = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).take("u-race", 3)));
    for (let round = 0; round < 10; round++) {
      const user = `u-race-${round}`;
      const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).take(user, 3)));
      expect(burst.filter((t) => "release" in t)).toHaveLength(3);
    }
    const taken = takes.filter((t): t is { release: () => void } => "release" in t);
    expect(taken).toHaveLength(3);
    expect(takes.filter((t) => "held" in t).every((t) => (t as { held: number }).held === 3)).toBe(true);
    expect([await one.held("u-race"), await two.held("u-race"), await one.held("someone-else")]).toEqual([3, 3, 0]);
    taken[0].release();
    taken[0].release();
    await until(async () => (await two.held("u-race")) === 2);
    expect("release" in (await two.take("u-race", 3))).toBe(true);
    expect("held" in (await one.take("u-race", 3))).toBe(true);
  });

  it("the slots of a process that died free up after its lease; a live process keeps its slots by renewing them", async () => {
    const live = slots(600);
    const dead = slots(600);
    expect("release" in (await live.take("u-lease", 2))).toBe(true);
    expect("release" in (await dead.take("u-lease", 2))).toBe(true);
    expect("held" in (await live.take("u-lease", 2))).toBe(true);
    // The dead one stops renewing (as after SIGKILL: no close, no delete).
    clearInterval((dead as unknown as { timer: NodeJS.Timeout }).timer);
    await until(async () => (await live.held("u-lease")) === 1, 10_000);
    // Well past several leases, the live process's slot is still held.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await live.held("u-lease")).toBe(1);
    expect("release" in (await live.take("u-lease", 2))).toBe(true);
  });

  it("an uncapped take does not wait on the database, and still counts in every process", async () => {
    const [one, two] = [slots(), slots()];
    const t = await one.take("u-free", null);
    await until(async () => (await two.held("u-free")) === 1);
    if ("release" in t) t.release();
    await until(async () => (await two.held("u-free")) === 0);
  });
});

describe("the token ledger on PostgreSQL", () => {
  it("never loses an addition from two processes, and writes many additions in few statements", async () => {
    const [p1, p2] = [new CountingPool({ connectionString: db.url }), new CountingPool({ connectionString: db.url })];
    pools.push(p1, p2);
    const [a, b] = [new PgUsageLedger(p1), new PgUsageLedger(p2)];
    await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 2 ? a : b).add(i % 4 < 2 ? "u1" : "u2", { input: 3, output: 2 }, "2026-01-01")));
    const statements = p1.statements + p2.statements;
    console.log(`400 additions from two processes: ${statements} statements`);
    expect(statements).toBeLessThanOrEqual(4);
    expect(await a.get("u1", "2026-01-01")).toEqual({ day: "2026-01-01", input_tokens: 600, output_tokens: 400, total_tokens: 1000, model_calls: 200 });
    expect(await b.get("u2", "2026-01-01")).toEqual({ day: "2026-01-01", input_tokens: 600, output_tokens: 400, total_tokens: 1000, model_calls: 200 });
    expect(await b.recent("u1", 3, new Date("2026-01-02T12:00:00Z"))).toHaveLength(1);
  });

  it("a read sees this process's queued additions at once (no batch window)", async () => {
    const ledger = new PgUsageLedger(pool(), 60_000);
    void ledger.add("u-now", { input: 5, output: -3 }, "2026-02-01");
    expect((await ledger.get("u-now", "2026-02-01")).total_tokens).toBe(5);
  });
});
