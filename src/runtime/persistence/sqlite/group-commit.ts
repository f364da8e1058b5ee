// Group commit for a better-sqlite3 connection: the writes queued during one event-loop turn share one transaction,
// and each writer is answered after the commit that holds its write.
import type Database from "better-sqlite3";

/** One queued write: runs inside the group's transaction; its result settles the writer's promise. */
interface Unit {
  write(): unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * The write queue of one SQLite connection. Every commit in WAL mode takes and releases the WAL locks and appends the
 * pages it changed; under load a run's ~10 small writes (checkpoints, the run and thread rows) each paid that alone.
 * Here {@link run} queues a write and {@link flush} (scheduled with `setImmediate`, i.e. after the turn's I/O
 * callbacks) executes everything queued in one transaction, in queue order.
 *
 * Guarantees:
 * - a writer's promise settles only after its write is committed (or has failed);
 * - writes apply in the order they were queued;
 * - one write is atomic: when a group's transaction fails, each write is retried in a transaction of its own and
 *   only those that fail again are rejected, with SQLite's error;
 * - readers call {@link flush} first (synchronously) and so see every write queued before them.
 *
 * Writes must be synchronous SQL on this connection, and must not call {@link flush}: they run inside the group.
 */
export class GroupCommit {
  private queue: Unit[] = [];
  private scheduled = false;

  /** @param db The connection whose writes are grouped. */
  constructor(private readonly db: Database.Database) {}

  /**
   * Queues `write` for the next group.
   * @returns The value `write` returned, once the group holding it is committed.
   * @throws (rejects with) what `write` threw when run alone, e.g. a SqliteError for a refused row.
   */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    });
  }

  /** Commits everything queued now, synchronously. Never throws: failures reject the writes they belong to. */
  flush(): void {
    const units = this.queue;
    if (units.length === 0) return;
    this.queue = [];
    let results: unknown[];
    try {
      results = this.db.transaction(() => units.map((unit) => unit.write()))();
    } catch {
      // One write broke the group (the transaction rolled back): retry each alone, so only the guilty ones fail.
      for (const unit of units) {
        let result: unknown;
        try {
          result = this.db.transaction(() => unit.write())();
        } catch (err) {
          unit.reject(err);
          continue;
        }
        unit.resolve(result);
      }
      return;
    }
    units.forEach((unit, i) => unit.resolve(results[i]));
  }
}

/**
 * Runs `write` through `commits` when the store has a write queue (answered after the group's commit), else at once
 * (a connection of its own, e.g. the in-memory database).
 * @returns What `write` returned.
 * @throws (rejects with) what `write` threw.
 */
export function commitWith<T>(commits: GroupCommit | undefined, write: () => T): Promise<T> {
  if (commits) return commits.run(write);
  try {
    return Promise.resolve(write());
  } catch (err) {
    return Promise.reject(err);
  }
}
