import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoginLimiter, type LoginLimiterOptions } from "../../src/auth/login-limiter.js";
import { PgLoginCounterStore } from "../../src/auth/pg-repositories.js";
import type { LoginCounterStore } from "../../src/auth/repositories.js";
import { SqliteLoginCounterStore } from "../../src/auth/sqlite-repositories.js";
import { migratePostgres } from "../../src/runtime/persistence/postgres/pg-stores.js";
import { createTestDatabase } from "../support/services.js";

// The lockout policy and its atomic check-and-count, on both stores. Two connections (SQLite) or two pools
// (PostgreSQL) on one database stand for two gateway processes.
interface Backend {
  /** A store on a new connection to this test's database. */
  store(): LoginCounterStore;
  rows(): Promise<number>;
}

const backends: [string, () => Promise<Backend & { close(): Promise<void> }>][] = [
  [
    "SQLite",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "dfgw-limiter-"));
      const file = path.join(dir, "auth.sqlite");
      const dbs: Database.Database[] = [];
      const open = () => {
        const db = new Database(file);
        db.pragma("journal_mode = WAL");
        db.pragma("busy_timeout = 5000");
        dbs.push(db);
        return db;
      };
      return {
        store: () => new SqliteLoginCounterStore(open()),
        rows: async () => (open().prepare("SELECT COUNT(*) AS n FROM login_counters").get() as { n: number }).n,
        close: async () => {
          for (const db of dbs) db.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    "PostgreSQL",
    async () => {
      const db = await createTestDatabase();
      const pools: pg.Pool[] = [];
      const open = () => {
        const pool = new pg.Pool({ connectionString: db.url, max: 10 });
        pools.push(pool);
        return pool;
      };
      await migratePostgres(open());
      return {
        store: () => new PgLoginCounterStore(open()),
        rows: async () => Number((await pools[0].query("SELECT COUNT(*) AS n FROM login_counters")).rows[0].n),
        close: async () => {
          await Promise.all(pools.map((p) => p.end()));
          await db.drop();
        },
      };
    },
  ],
];

describe.each(backends)("LoginLimiter on %s", (_name, make) => {
  let backend: Awaited<ReturnType<typeof make>>;
  beforeAll(async () => {
    backend = await make();
  });
  afterAll(async () => backend?.close());

  let now = 1_700_000_000_000;
  const limiter = (options: Partial<LoginLimiterOptions> = {}) => new LoginLimiter({ store: backend.store(), now: () => now, ...options });

  it("locks an account on its 5th attempt, then for a doubling delay capped at 15 min", async () => {
    const l = limiter();
    for (let i = 0; i < 5; i++) expect(await l.begin("10.0.0.1", "backoff@example.com")).toEqual({ locked: false });
    expect(await l.begin("10.0.0.1", "backoff@example.com")).toEqual({ locked: true, retryAfterSeconds: 60 });
    // Another address does not get around the account's lock.
    expect(await l.begin("10.9.9.9", " Backoff@Example.com ")).toEqual({ locked: true, retryAfterSeconds: 60 });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const gate = await l.begin("10.0.0.1", "backoff@example.com");
      if (!gate.locked) throw new Error("expected a lock");
      now += gate.retryAfterSeconds * 1000;
      expect(await l.begin("10.0.0.1", "backoff@example.com")).toEqual({ locked: false });
      delays.push(gate.retryAfterSeconds);
    }
    expect(delays).toEqual([60, 120, 240, 480, 900, 900]);
    // A right password clears the account's counter.
    now += 900_000;
    expect(await l.begin("10.0.0.1", "backoff@example.com")).toEqual({ locked: false });
    await l.succeeded("10.0.0.1", "backoff@example.com");
    for (let i = 0; i < 5; i++) expect(await l.begin("10.0.0.1", "backoff@example.com")).toEqual({ locked: false });
  });

  it("one account's lock leaves other accounts behind the same address alone; a quiet hour forgets the count", async () => {
    const l = limiter();
    for (let i = 0; i < 5; i++) await l.begin("10.0.0.2", "locked@example.com");
    expect((await l.begin("10.0.0.2", "locked@example.com")).locked).toBe(true);
    expect(await l.begin("10.0.0.2", "colleague@example.com")).toEqual({ locked: false });
    for (let i = 0; i < 4; i++) await l.begin("10.0.0.2", "forgetful@example.com");
    now += 3_600_000;
    for (let i = 0; i < 4; i++) expect(await l.begin("10.0.0.2", "forgetful@example.com")).toEqual({ locked: false });
  });

  it("locks an address at its own limit (across accounts) for 5 min, then its count restarts; a success hands its attempt back", async () => {
    const l = limiter({ address: { maxFailures: 3 } });
    for (let i = 0; i < 3; i++) expect(await l.begin("10.0.0.3", `spray${i}@example.com`)).toEqual({ locked: false });
    expect(await l.begin("10.0.0.3", "someone@example.com")).toEqual({ locked: true, retryAfterSeconds: 300 });
    expect(await l.begin("10.0.0.4", "someone@example.com")).toEqual({ locked: false });
    now += 300_000;
    expect(await l.begin("10.0.0.3", "a@example.com")).toEqual({ locked: false });
    await l.succeeded("10.0.0.3", "a@example.com");
    expect(await l.begin("10.0.0.3", "b@example.com")).toEqual({ locked: false });
    expect(await l.begin("10.0.0.3", "c@example.com")).toEqual({ locked: false });
    // The 3rd counted attempt sets the lock; were it right, its success lifts it.
    expect(await l.begin("10.0.0.3", "d@example.com")).toEqual({ locked: false });
    expect((await l.begin("10.0.0.3", "e@example.com")).locked).toBe(true);
    await l.succeeded("10.0.0.3", "d@example.com");
    expect(await l.begin("10.0.0.3", "f@example.com")).toEqual({ locked: false });
  });

  it("60 concurrent attempts on one account through two processes: exactly 5 are let through", async () => {
    const [one, two] = [limiter(), limiter()];
    const gates = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).begin(`10.1.0.${i}`, "target@example.com")));
    expect(gates.filter((g) => !g.locked)).toHaveLength(5);
    // Spread over many addresses, the address limits never came into play: the account's did.
    expect(gates.filter((g) => g.locked).every((g) => g.locked && g.retryAfterSeconds === 60)).toBe(true);
  });

  it("60 concurrent attempts from one address over many accounts: exactly the address limit is let through", async () => {
    const [one, two] = [limiter({ address: { maxFailures: 7 } }), limiter({ address: { maxFailures: 7 } })];
    const gates = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).begin("10.2.0.1", `many${i}@example.com`)));
    expect(gates.filter((g) => !g.locked)).toHaveLength(7);
  });

  it("deletes forgotten counters", async () => {
    const l = limiter({ pruneEveryMs: 0 });
    await l.begin("10.3.0.1", "prune@example.com");
    expect(await backend.rows()).toBeGreaterThan(0);
    now += 86_400_000;
    await l.begin("10.3.0.2", "prune-later@example.com");
    // The prune runs in the background: wait for it, not for a fixed time.
    for (let i = 0; i < 200 && (await backend.rows()) > 2; i++) await new Promise((r) => setImmediate(r));
    expect(await backend.rows()).toBe(2);
  });
});
