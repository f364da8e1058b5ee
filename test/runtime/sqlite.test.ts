import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlite, SQLITE_CACHE_KIB } from "../../src/runtime/persistence/sqlite/sqlite.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function tempFile(name: string): string {
  const home = mkdtempSync(path.join(os.tmpdir(), "df-sqlite-"));
  homes.push(home);
  return path.join(home, name);
}

describe("openSqlite", () => {
  it("opens a WAL database with no fsync per commit, a busy timeout and SQLite's 2 MiB page cache", () => {
    const db = openSqlite(tempFile("a.sqlite"));
    try {
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(db.pragma("synchronous", { simple: true })).toBe(1); // NORMAL
      expect(db.pragma("busy_timeout", { simple: true })).toBe(5000);
      expect(db.pragma("cache_size", { simple: true })).toBe(-SQLITE_CACHE_KIB);
      // better-sqlite3's own build default, which the gateway does not keep: 16 MiB a connection.
      const plain = new Database(":memory:");
      expect(plain.pragma("cache_size", { simple: true })).toBe(-16000);
      plain.close();
      expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
    } finally {
      db.close();
    }
  });

  it("sets the WAL checkpoint interval it is given", () => {
    const db = openSqlite(tempFile("b.sqlite"), { walAutocheckpointPages: 4000 });
    try {
      expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(4000);
    } finally {
      db.close();
    }
  });

  it("throws a clear error on a file that is not a database", () => {
    const file = tempFile("c.sqlite");
    writeFileSync(file, "not a database, just text that is long enough to have a header".repeat(20));
    expect(() => openSqlite(file)).toThrow(/not a database/);
  });
});
