// The MCP task table in PostgreSQL (`database.backend: postgres`), shared by every gateway process: a claim picks
// its rows with `FOR UPDATE SKIP LOCKED` and leases them, so two processes never poll (or deliver) one task twice.
import type pg from "pg";
import { ADDED_COLUMNS, MCP_TASKS_DDL, McpTaskStore } from "./task-store.js";

/** Advisory-lock key of the DDL (processes starting together). */
const DDL_LOCK = 4694101;

/** `?` placeholders as `$1, $2, ...`. */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** {@link McpTaskStore} on its own pg pool. Call {@link PgMcpTaskStore.migrate} once before use. */
export class PgMcpTaskStore extends McpTaskStore {
  protected readonly lockClause = " FOR UPDATE SKIP LOCKED";

  /** @param pool a pool this store owns ({@link close} ends it). */
  constructor(private readonly pool: pg.Pool) {
    super();
  }

  /** Creates the table and its newer columns (idempotent, serialised across processes). */
  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1)", [DDL_LOCK]);
      for (const ddl of MCP_TASKS_DDL) await client.query(ddl);
      for (const [name, type] of Object.entries(ADDED_COLUMNS)) await client.query(`ALTER TABLE mcp_tasks ADD COLUMN IF NOT EXISTS ${name} ${type}`);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  protected async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return (await this.pool.query(numbered(sql), params)).rows as Record<string, unknown>[];
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
