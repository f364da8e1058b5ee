// Prepared better-sqlite3 statements reused by SQL text: preparing costs more than running a small statement
// (1.6% of the gateway's CPU under load in a profile), and the stores run the same few statements on every run.
import type Database from "better-sqlite3";

/** Most distinct SQL texts kept (searches build their text from the filters given; the cap bounds them). */
const MAX_STATEMENTS = 256;

/** Databases whose writes are committed once per event-loop turn ({@link commitWritesPerTurn}). */
const turnCommits = new WeakMap<Database.Database, TurnCommit>();

/** One open transaction per event-loop turn on a database: begun by the turn's first write, committed after it. */
class TurnCommit {
  private readonly commit = () => this.flush();

  constructor(private readonly db: Database.Database, private readonly onError: (err: Error) => void) {}

  /** Opens the turn's transaction unless one is open (this one, or a caller's `db.transaction()`). */
  begin(): void {
    if (this.db.inTransaction || !this.db.open) return;
    this.db.exec("BEGIN");
    setImmediate(this.commit);
  }

  /** Commits the open transaction now (shutdown), if any. Never throws: a failed commit is reported and rolled back. */
  flush(): void {
    if (!this.db.open || !this.db.inTransaction) return;
    try {
      this.db.exec("COMMIT");
    } catch (err) {
      this.onError(err as Error);
      try {
        if (this.db.inTransaction) this.db.exec("ROLLBACK");
      } catch {
        // Nothing left to undo.
      }
    }
  }
}

/**
 * Makes the writes that go through a {@link StatementCache} (and {@link withStatementCache}) on `db` share one
 * transaction per event-loop turn, committed on `setImmediate`: a run makes ~15 small writes (run, thread,
 * checkpoint and pending-write rows), and concurrent runs make theirs in the same turns, so each commit is paid
 * once per turn instead of once per statement. Each statement stays atomic (a failing statement undoes only
 * itself; a `db.transaction()` inside the turn's transaction becomes a savepoint), reads on `db` see the writes at
 * once, and other connections see them after the turn (within a millisecond or so). What a crash can lose grows
 * from nothing to the current turn's writes. WAL mode only (readers are never blocked).
 * @param onError Called with the error of a commit that failed (the turn's writes are then rolled back).
 * @returns `flush()`, which commits the open turn now: call it before closing the database.
 */
export function commitWritesPerTurn(db: Database.Database, onError: (err: Error) => void): { flush(): void } {
  const turn = new TurnCommit(db, onError);
  turnCommits.set(db, turn);
  return { flush: () => turn.flush() };
}

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
    if (!statement.readonly) turnCommits.get(this.db)?.begin();
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
