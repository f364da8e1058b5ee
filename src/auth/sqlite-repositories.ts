// SQLite implementations of the account and API-key repositories, in the gateway's better-sqlite3 database.
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";
import {
  EmailTakenError,
  type ApiKeyRecord,
  type ApiKeyRepository,
  type CounterDecision,
  type LiveSession,
  type LoginCounter,
  type LoginCounterStore,
  type NewSession,
  type NewUser,
  type SessionRepository,
  type UserRecord,
  type UserRepository,
} from "./repositories.js";

interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  system_role: "admin" | "user";
  created_at: string;
  needs_setup: number;
  token_version: number;
  oauth_provider: string | null;
}

const toUser = (row: UserRow | undefined): UserRecord | null => (row ? { ...row, needs_setup: row.needs_setup === 1 } : null);

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE" || (err as { code?: string }).code === "SQLITE_CONSTRAINT_PRIMARYKEY";

/** Accounts in the `users` table (created if missing). better-sqlite3 is synchronous, so each call is atomic. */
export class SqliteUserRepository implements UserRepository {
  private readonly byId: Database.Statement;
  private readonly byEmail: Database.Statement;
  private readonly admins: Database.Statement;
  private readonly insert: Database.Statement;
  private readonly save: Database.Statement;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS users (
      id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, password_hash TEXT, system_role TEXT NOT NULL,
      created_at TEXT NOT NULL, needs_setup INTEGER NOT NULL DEFAULT 0, token_version INTEGER NOT NULL DEFAULT 0,
      oauth_provider TEXT)`);
    this.byId = db.prepare("SELECT * FROM users WHERE id = ?");
    this.byEmail = db.prepare("SELECT * FROM users WHERE email = ?");
    this.admins = db.prepare("SELECT COUNT(*) AS n FROM users WHERE system_role = 'admin'");
    this.insert = db.prepare("INSERT INTO users (id, email, password_hash, system_role, created_at, needs_setup, token_version) VALUES (?, ?, ?, ?, ?, ?, 0)");
    this.save = db.prepare("UPDATE users SET email = ?, password_hash = ?, needs_setup = ?, token_version = ? WHERE id = ?");
  }

  async getById(id: string): Promise<UserRecord | null> {
    return toUser(this.byId.get(id) as UserRow | undefined);
  }

  async getByEmail(email: string): Promise<UserRecord | null> {
    return toUser(this.byEmail.get(email.trim().toLowerCase()) as UserRow | undefined);
  }

  async countAdmins(): Promise<number> {
    return (this.admins.get() as { n: number }).n;
  }

  async create(user: NewUser, options: { onlyIfNoAdmin?: boolean } = {}): Promise<UserRecord | null> {
    const id = randomUUID();
    const run = this.db.transaction(() => {
      if (options.onlyIfNoAdmin && (this.admins.get() as { n: number }).n > 0) return null;
      this.insert.run(id, user.email.trim().toLowerCase(), user.password_hash, user.system_role, new Date().toISOString(), user.needs_setup ? 1 : 0);
      return toUser(this.byId.get(id) as UserRow);
    });
    try {
      return run.immediate();
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    }
  }

  async update(user: UserRecord): Promise<void> {
    try {
      this.save.run(user.email.trim().toLowerCase(), user.password_hash, user.needs_setup ? 1 : 0, user.token_version, user.id);
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    }
  }
}

/** API keys in the `api_keys` table (created if missing); only the SHA-256 of each key is stored. */
export class SqliteApiKeyRepository implements ApiKeyRepository {
  private readonly insert: Database.Statement;
  private readonly byHash: Database.Statement;
  private readonly byUser: Database.Statement;
  private readonly one: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly used: Database.Statement;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS api_keys (
      id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, prefix TEXT NOT NULL,
      key_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, last_used_at TEXT);
      CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys (user_id)`);
    this.insert = db.prepare("INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
    this.byHash = db.prepare("SELECT * FROM api_keys WHERE key_hash = ?");
    this.byUser = db.prepare("SELECT * FROM api_keys WHERE user_id = ? ORDER BY created_at DESC, rowid DESC");
    this.one = db.prepare("SELECT * FROM api_keys WHERE id = ? AND user_id = ?");
    this.remove = db.prepare("DELETE FROM api_keys WHERE id = ? AND user_id = ?");
    this.used = db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?");
  }

  async create(key: ApiKeyRecord): Promise<void> {
    this.insert.run(key.id, key.user_id, key.name, key.prefix, key.key_hash, key.created_at, key.last_used_at);
  }

  async getByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return (this.byHash.get(keyHash) as ApiKeyRecord | undefined) ?? null;
  }

  async listByUser(userId: string): Promise<ApiKeyRecord[]> {
    return this.byUser.all(userId) as ApiKeyRecord[];
  }

  async delete(id: string, userId: string): Promise<ApiKeyRecord | null> {
    return this.db.transaction(() => {
      const found = (this.one.get(id, userId) as ApiKeyRecord | undefined) ?? null;
      if (found) this.remove.run(id, userId);
      return found;
    })();
  }

  async touch(id: string, at: string): Promise<void> {
    this.used.run(at, id);
  }
}

/** Sessions in the `auth_sessions` table (created if missing), joined to `users` on lookup. */
export class SqliteSessionRepository implements SessionRepository {
  private readonly insert: Database.Statement;
  private readonly live: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly removeUser: Database.Statement;
  private readonly expired: Database.Statement;

  constructor(db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS auth_sessions (
      id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL, expires_at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS auth_sessions_user ON auth_sessions (user_id);
      CREATE INDEX IF NOT EXISTS auth_sessions_expiry ON auth_sessions (expires_at)`);
    this.insert = db.prepare("INSERT INTO auth_sessions (id, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)");
    this.live = db.prepare(
      "SELECT s.user_id, u.id, u.email, u.system_role, u.token_version FROM auth_sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id = ? AND s.expires_at > ?",
    );
    this.remove = db.prepare("DELETE FROM auth_sessions WHERE id = ?");
    this.removeUser = db.prepare("DELETE FROM auth_sessions WHERE user_id = ?");
    this.expired = db.prepare("DELETE FROM auth_sessions WHERE expires_at <= ?");
  }

  async create(session: NewSession): Promise<void> {
    this.insert.run(session.id, session.user_id, session.created_at, session.expires_at);
  }

  async lookup(id: string, nowMs: number): Promise<LiveSession | null> {
    const row = this.live.get(id, nowMs) as { user_id: string; id: string | null; email: string; system_role: "admin" | "user"; token_version: number } | undefined;
    if (!row) return null;
    return { user_id: row.user_id, user: row.id === null ? null : { id: row.id, email: row.email, system_role: row.system_role, token_version: row.token_version } };
  }

  async delete(id: string): Promise<void> {
    this.remove.run(id);
  }

  async deleteByUser(userId: string): Promise<number> {
    return this.removeUser.run(userId).changes;
  }

  async prune(nowMs: number): Promise<number> {
    return this.expired.run(nowMs).changes;
  }
}

/**
 * Login counters in the `login_counters` table (created if missing). {@link update} runs in an IMMEDIATE
 * transaction: better-sqlite3 is synchronous, so nothing else in this process runs in between, and the write lock
 * keeps other processes on the same file out.
 */
export class SqliteLoginCounterStore implements LoginCounterStore {
  private readonly one: Database.Statement;
  private readonly save: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly forgotten: Database.Statement;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS login_counters (
      key TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_until INTEGER NOT NULL, forget_at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS login_counters_forget ON login_counters (forget_at)`);
    this.one = db.prepare("SELECT failures, locked_until, forget_at FROM login_counters WHERE key = ?");
    this.save = db.prepare(
      "INSERT INTO login_counters (key, failures, locked_until, forget_at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until, forget_at = excluded.forget_at",
    );
    this.remove = db.prepare("DELETE FROM login_counters WHERE key = ?");
    this.forgotten = db.prepare("DELETE FROM login_counters WHERE forget_at <= ? AND locked_until <= ?");
  }

  async update<T>(keys: string[], decide: (current: (LoginCounter | null)[]) => CounterDecision<T>): Promise<T> {
    const step = this.db.transaction(() => {
      const current = keys.map((key) => (this.one.get(key) as LoginCounter | undefined) ?? null);
      const { writes, result } = decide(current);
      keys.forEach((key, i) => {
        const write = writes[i];
        if (write === null) this.remove.run(key);
        else if (write) this.save.run(key, write.failures, write.locked_until, write.forget_at);
      });
      return result;
    });
    return step.immediate();
  }

  async prune(nowMs: number): Promise<number> {
    return this.forgotten.run(nowMs, nowMs).changes;
  }
}
