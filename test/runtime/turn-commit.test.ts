import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { parseAppConfig } from "../../src/config/schema.js";
import { openPersistence } from "../../src/runtime/persistence.js";
import { commitWritesPerTurn, StatementCache } from "../../src/runtime/statement-cache.js";

// Writes through the statement cache share one transaction per event-loop turn; what callers rely on must hold:
// each statement is atomic, this connection reads its writes at once, others after the turn, nothing is lost on close.
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "turn-commit-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function openDb(file: string) {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, v TEXT NOT NULL)");
  return db;
}

describe("commitWritesPerTurn", () => {
  it("commits a turn's writes together after the turn: this connection sees them at once, another after the turn", async () => {
    const file = path.join(tempDir(), "db.sqlite");
    const db = openDb(file);
    const other = openDb(file);
    const errors: Error[] = [];
    commitWritesPerTurn(db, (e) => errors.push(e));
    const cache = new StatementCache(db);
    cache.get("INSERT INTO t (id, v) VALUES (?, ?)").run("a", "1");
    cache.get("INSERT INTO t (id, v) VALUES (?, ?)").run("b", "2");
    expect(db.inTransaction).toBe(true);
    expect(cache.get("SELECT count(*) AS n FROM t").get()).toEqual({ n: 2 });
    expect(other.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
    await nextTurn();
    expect(db.inTransaction).toBe(false);
    expect(other.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 2 });
    expect(errors).toEqual([]);
    db.close();
    other.close();
  });

  it("keeps each statement atomic: a failing write undoes only itself, and a db.transaction() inside the turn rolls back alone", async () => {
    const file = path.join(tempDir(), "db.sqlite");
    const db = openDb(file);
    commitWritesPerTurn(db, () => undefined);
    const cache = new StatementCache(db);
    const insert = (id: string, v: string) => cache.get("INSERT INTO t (id, v) VALUES (?, ?)").run(id, v);
    insert("a", "1");
    expect(() => insert("a", "again")).toThrow(/UNIQUE/);
    const failing = db.transaction(() => {
      insert("b", "2");
      throw new Error("undo me");
    });
    expect(() => failing()).toThrow("undo me");
    insert("c", "3");
    await nextTurn();
    const other = openDb(file);
    expect(other.prepare("SELECT id, v FROM t ORDER BY id").all()).toEqual([{ id: "a", v: "1" }, { id: "c", v: "3" }]);
    db.close();
    other.close();
  });

  it("leaves reads alone (no transaction for a turn that only reads), and flush() commits the open turn at once", () => {
    const file = path.join(tempDir(), "db.sqlite");
    const db = openDb(file);
    const turn = commitWritesPerTurn(db, () => undefined);
    const cache = new StatementCache(db);
    cache.get("SELECT count(*) AS n FROM t").get();
    expect(db.inTransaction).toBe(false);
    cache.get("INSERT INTO t (id, v) VALUES (?, ?)").run("a", "1");
    turn.flush();
    expect(db.inTransaction).toBe(false);
    const other = openDb(file);
    expect(other.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    db.close();
    other.close();
  });

  it("loses nothing when the gateway's persistence closes in the same turn as its last writes", async () => {
    const home = tempDir();
    const appConfig = parseAppConfig({ models: [{ name: "m", use: "deerflow-gateway:ScriptedChatModel", model: "m" }] });
    const first = await openPersistence(appConfig, home);
    await first.threads.create("thread-1", { topic: "kept" }, "alice");
    await first.close();
    const again = await openPersistence(appConfig, home);
    expect((await again.threads.get("thread-1"))?.metadata).toMatchObject({ topic: "kept" });
    await again.close();
  });
});
