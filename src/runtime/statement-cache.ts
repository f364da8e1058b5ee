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
