// Run slots in PostgreSQL (`database.backend: postgres`): the `run_slots` table holds one row per run in flight in
// any process, so `limits.max_concurrent_runs_per_user` caps a user's runs across the whole service. A row is a
// lease: its process renews the leases of all its slots in one statement every third of the lease, so the slots of
// a process that died (SIGKILL, OOM, machine loss) are free again after at most one lease.
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { RunSlots, SlotTake } from "./run-slots.js";
import { inTransaction } from "../persistence/postgres/pg-transaction.js";

/** Advisory-lock class of the per-user slot lock (two-int4 locks never collide with the one-bigint ones). */
const SLOT_LOCK_CLASS = 0x0de3f21;
/** Serialises the DDL of processes starting together. */
const SLOTS_DDL_LOCK = 0x0de3f22;

/** How long a slot outlives its process's last renewal, in ms (default of {@link PgRunSlots}). */
export const SLOT_LEASE_MS = 60_000;

/**
 * Slots in PostgreSQL. With a cap, {@link take} runs under a per-user transaction-scoped advisory lock: expired rows
 * go, live ones are counted and a row is inserted only below the cap, so two processes never both take the last
 * slot. Without a cap the row is inserted without waiting (the run is not held up; it only feeds the count).
 */
export class PgRunSlots implements RunSlots {
  /** This process's slots: id -> the insert that wrote it (a release deletes after it). */
  private readonly mine = new Map<string, Promise<unknown>>();
  private readonly holder = randomUUID();
  private readonly timer: NodeJS.Timeout;

  /** @param leaseMs how long a slot outlives its process's last renewal, in ms. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly leaseMs: number = SLOT_LEASE_MS,
  ) {
    this.timer = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  /** Creates the `run_slots` table when missing (idempotent, serialised across processes). */
  static async migrate(pool: pg.Pool): Promise<void> {
    await inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [SLOTS_DDL_LOCK]);
      await client.query(`CREATE TABLE IF NOT EXISTS run_slots (
        slot_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, holder TEXT NOT NULL, expires_at BIGINT NOT NULL);
        CREATE INDEX IF NOT EXISTS run_slots_user ON run_slots (user_id, expires_at);
        CREATE INDEX IF NOT EXISTS run_slots_holder ON run_slots (holder)`);
    });
  }

  async take(userId: string, max: number | null): Promise<SlotTake> {
    const slotId = randomUUID();
    const values = [slotId, userId, this.holder, Date.now() + this.leaseMs];
    if (!max) {
      const inserted = this.pool.query("INSERT INTO run_slots (slot_id, user_id, holder, expires_at) VALUES ($1, $2, $3, $4)", values).catch(() => undefined);
      return this.taken(slotId, inserted);
    }
    const { held, taken } = await inTransaction(this.pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [SLOT_LOCK_CLASS, userId]);
      // One snapshot: `held` ignores the expired rows the first CTE deletes.
      const { rows } = await client.query<{ held: number; taken: number }>(
        `WITH gone AS (DELETE FROM run_slots WHERE user_id = $2 AND expires_at <= $5),
          live AS (SELECT count(*)::int AS n FROM run_slots WHERE user_id = $2 AND expires_at > $5),
          ins AS (INSERT INTO run_slots (slot_id, user_id, holder, expires_at) SELECT $1, $2, $3, $4 FROM live WHERE live.n < $6 RETURNING 1)
        SELECT (SELECT n FROM live) AS held, (SELECT count(*)::int FROM ins) AS taken`,
        [...values, Date.now(), max],
      );
      return rows[0];
    });
    return taken ? this.taken(slotId, Promise.resolve()) : { held };
  }

  private taken(slotId: string, inserted: Promise<unknown>): SlotTake {
    this.mine.set(slotId, inserted);
    return {
      release: () => {
        const write = this.mine.get(slotId);
        if (!write) return;
        this.mine.delete(slotId);
        // Not awaited by the run; a failed delete is undone by the lease.
        void write.then(() => this.pool.query("DELETE FROM run_slots WHERE slot_id = $1", [slotId])).catch(() => undefined);
      },
    };
  }

  async held(userId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM run_slots WHERE user_id = $1 AND expires_at > $2", [userId, Date.now()]);
    return rows[0].n;
  }

  /** Extends this process's leases and drops every expired slot (of processes that died). */
  private async renew(): Promise<void> {
    const now = Date.now();
    if (this.mine.size) await this.pool.query("UPDATE run_slots SET expires_at = $1 WHERE holder = $2", [now + this.leaseMs, this.holder]);
    await this.pool.query("DELETE FROM run_slots WHERE expires_at <= $1", [now]);
  }

  /** Stops the renewals and gives back this process's slots (its runs have been drained). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.mine.values());
    this.mine.clear();
    await this.pool.query("DELETE FROM run_slots WHERE holder = $1", [this.holder]).catch(() => undefined);
  }
}
