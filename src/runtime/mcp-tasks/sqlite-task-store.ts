// The MCP task table in its own SQLite file under the runtime home (`data/mcp-tasks.sqlite`), for the local
// database backends. SQLite's single writer makes each claim (one UPDATE ... RETURNING) atomic.
import type Database from "better-sqlite3";
import { openSqlite } from "../persistence/sqlite/sqlite.js";
import { ADDED_COLUMNS, MCP_TASKS_DDL, McpTaskStore } from "./task-store.js";

/** {@link McpTaskStore} on better-sqlite3; the table is created (or given its newer columns) on construction. */
export class SqliteMcpTaskStore extends McpTaskStore {
  private readonly db: Database.Database;
  protected readonly lockClause = "";

  /** @param file SQLite file (its directory made by the caller), or `:memory:`. */
  constructor(file: string) {
    super();
    this.db = openSqlite(file);
    for (const ddl of MCP_TASKS_DDL) this.db.exec(ddl);
    const have = new Set((this.db.prepare("PRAGMA table_info(mcp_tasks)").all() as { name: string }[]).map((c) => c.name));
    for (const [name, type] of Object.entries(ADDED_COLUMNS)) if (!have.has(name)) this.db.exec(`ALTER TABLE mcp_tasks ADD COLUMN ${name} ${type}`);
  }

  protected async query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    const statement = this.db.prepare(sql);
    if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
    statement.run(...params);
    return [];
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
