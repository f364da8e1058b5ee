// How the gateway opens its SQLite files: one place for the connection settings every file shares.
import Database from "better-sqlite3";

/**
 * Page cache of each connection, in KiB (SQLite's `cache_size` in its negative, KiB form): SQLite's own default
 * (2 MiB). better-sqlite3 builds SQLite with 16 MiB instead, and a busy gateway database fills it within a minute
 * of load: 29 MB of resident `malloc` memory at 256 concurrent runs against 14 MB with 2 MiB, for +0.14 `pread`
 * calls a run (3,000 runs; the writes of a run touch the right edge of a few B-trees, whose pages stay cached,
 * and the rest is in the OS page cache, which RSS does not count).
 */
export const SQLITE_CACHE_KIB = 2000;

/** Options of {@link openSqlite}. */
export interface OpenSqliteOptions {
  /** WAL pages before SQLite copies the log back into the database (`wal_autocheckpoint`); SQLite's 1,000 if unset. */
  walAutocheckpointPages?: number;
}

/**
 * Opens (creating it when missing) the SQLite file `file` as every gateway database is used: WAL journal,
 * `synchronous = NORMAL` (no fsync per commit: a crash of the process loses nothing, an OS crash may lose the last
 * commits), `busy_timeout` 5,000 ms (other processes sharing the file) and a {@link SQLITE_CACHE_KIB} page cache.
 * @param file Path of the database file; its directory must exist.
 * @returns The open connection; the caller closes it.
 * @throws SqliteError when the file cannot be opened or is not a database.
 */
export function openSqlite(file: string, options: OpenSqliteOptions = {}): Database.Database {
  const db = new Database(file);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    if (options.walAutocheckpointPages !== undefined) db.pragma(`wal_autocheckpoint = ${options.walAutocheckpointPages}`);
    db.pragma("busy_timeout = 5000");
    db.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
