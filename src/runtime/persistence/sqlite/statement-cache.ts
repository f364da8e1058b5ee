// Prepared better-sqlite3 statements reused by SQL text: preparing costs more than running a small statement
// (1.6% of the gateway's CPU under load in a profile), and the stores run the same few statements on every run.
import type Database from "better-sqlite3";

/** Most distinct SQL texts kept (searches build their text from the filters given; the cap bounds them). */
const MAX_STATEMENTS = 256;

/** A per-database cache of prepared statements, keyed by their SQL text. */
export class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  /**
   * The prepared statement for `sql` (prepared on first use).
   * @throws the SqliteError of an invalid statement.
   */
  get(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      if (this.statements.size >= MAX_STATEMENTS) this.statements.clear();
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/**
 * `db` seen through a {@link StatementCache}: `prepare(sql)` returns the statement prepared before for the same
 * text; every other member is the database's own (methods bound to it). For libraries that prepare on every call
 * (the LangGraph SQLite checkpointer prepares its INSERTs on each `put` / `putWrites`: 1.9% of the gateway's CPU
 * under load). Safe while the caller never runs two `iterate()` of one statement at once (the checkpointer only
 * uses `get`, `all` and `run`).
 */
export function withStatementCache(db: Database.Database): Database.Database {
  const cache = new StatementCache(db);
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => cache.get(sql);
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      let fn = bound.get(prop);
      if (!fn) bound.set(prop, (fn = (value as (...args: unknown[]) => unknown).bind(target)));
      return fn;
    },
  });
}
