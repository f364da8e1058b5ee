// One transaction on a pooled PostgreSQL client, and the idempotent table setup that every PostgreSQL store runs
// at start (serialised across processes starting together), so each store does not carry its own copy.
import type pg from "pg";

/**
 * Runs `fn` inside `BEGIN` / `COMMIT` on one client of `pool`; any error rolls back and is rethrown.
 * @returns what `fn` returns.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Runs the `CREATE ... IF NOT EXISTS` statements `ddl` in one transaction under the transaction-scoped advisory lock
 * `lockKey`: two processes starting together would otherwise race on the catalog (duplicate type/relation errors).
 */
export async function migrateUnderLock(pool: pg.Pool, lockKey: number, ddl: readonly string[]): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [lockKey]);
    for (const statement of ddl) await client.query(statement);
  });
}
