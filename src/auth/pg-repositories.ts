// PostgreSQL implementations of the account and API-key repositories (`database.backend: postgres`): every
// gateway process sees the same accounts and keys. Tables come from the runtime migrations (pg-stores.ts).
import { randomUUID } from "node:crypto";
import type pg from "pg";
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

const USER_COLUMNS = "id, email, password_hash, system_role, created_at, needs_setup, token_version, oauth_provider";
const KEY_COLUMNS = "id, user_id, name, prefix, key_hash, created_at, last_used_at";
/** Advisory-lock key serialising first-admin creation across processes. */
const FIRST_ADMIN_LOCK = 0x0de3f12;

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === "23505";

/** Accounts in PostgreSQL (`users`). */
export class PgUserRepository implements UserRepository {
  constructor(private readonly pool: pg.Pool) {}

  async getById(id: string): Promise<UserRecord | null> {
    return (await this.pool.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id])).rows[0] ?? null;
  }

  async getByEmail(email: string): Promise<UserRecord | null> {
    return (await this.pool.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email.trim().toLowerCase()])).rows[0] ?? null;
  }

  async countAdmins(): Promise<number> {
    return Number((await this.pool.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE system_role = 'admin'")).rows[0].n);
  }

  async create(user: NewUser, options: { onlyIfNoAdmin?: boolean } = {}): Promise<UserRecord | null> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      // The admin check and the insert are one step for every process: two first-boot requests on two
      // processes cannot both create an admin.
      if (options.onlyIfNoAdmin) {
        await client.query("SELECT pg_advisory_xact_lock($1)", [FIRST_ADMIN_LOCK]);
        const admins = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE system_role = 'admin'")).rows[0].n);
        if (admins > 0) {
          await client.query("ROLLBACK");
          return null;
        }
      }
      const { rows } = await client.query<UserRecord>(
        `INSERT INTO users (id, email, password_hash, system_role, created_at, needs_setup, token_version) VALUES ($1, $2, $3, $4, $5, $6, 0) RETURNING ${USER_COLUMNS}`,
        [randomUUID(), user.email.trim().toLowerCase(), user.password_hash, user.system_role, new Date().toISOString(), Boolean(user.needs_setup)],
      );
      await client.query("COMMIT");
      return rows[0];
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    } finally {
      client.release();
    }
  }

  async update(user: UserRecord): Promise<void> {
    try {
      await this.pool.query("UPDATE users SET email = $1, password_hash = $2, needs_setup = $3, token_version = $4 WHERE id = $5", [
        user.email.trim().toLowerCase(),
        user.password_hash,
        user.needs_setup,
        user.token_version,
        user.id,
      ]);
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    }
  }
}

/** API keys in PostgreSQL (`api_keys`); only the SHA-256 of each key is stored. */
export class PgApiKeyRepository implements ApiKeyRepository {
  constructor(private readonly pool: pg.Pool) {}

  async create(key: ApiKeyRecord): Promise<void> {
    await this.pool.query(`INSERT INTO api_keys (${KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [key.id, key.user_id, key.name, key.prefix, key.key_hash, key.created_at, key.last_used_at]);
  }

  async getByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    return (await this.pool.query<ApiKeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = $1`, [keyHash])).rows[0] ?? null;
  }

  async listByUser(userId: string): Promise<ApiKeyRecord[]> {
    return (await this.pool.query<ApiKeyRecord>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, seq DESC`, [userId])).rows;
  }

  async delete(id: string, userId: string): Promise<ApiKeyRecord | null> {
    return (await this.pool.query<ApiKeyRecord>(`DELETE FROM api_keys WHERE id = $1 AND user_id = $2 RETURNING ${KEY_COLUMNS}`, [id, userId])).rows[0] ?? null;
  }

  async touch(id: string, at: string): Promise<void> {
    await this.pool.query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2", [at, id]);
  }
}

/** Sessions in PostgreSQL (`auth_sessions`): a logout or password change on one process ends them on all. */
export class PgSessionRepository implements SessionRepository {
  constructor(private readonly pool: pg.Pool) {}

  async create(session: NewSession): Promise<void> {
    await this.pool.query("INSERT INTO auth_sessions (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)", [session.id, session.user_id, session.created_at, session.expires_at]);
  }

  async lookup(id: string, nowMs: number): Promise<LiveSession | null> {
    // A named statement: parsed and planned once per pooled connection, then one round trip per request.
    const { rows } = await this.pool.query<{ user_id: string; id: string | null; email: string; system_role: "admin" | "user"; token_version: number }>({
      name: "auth_session_lookup",
      text: "SELECT s.user_id, u.id, u.email, u.system_role, u.token_version FROM auth_sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id = $1 AND s.expires_at > $2",
      values: [id, nowMs],
    });
    const row = rows[0];
    if (!row) return null;
    return { user_id: row.user_id, user: row.id === null ? null : { id: row.id, email: row.email, system_role: row.system_role, token_version: row.token_version } };
  }

  async delete(id: string): Promise<void> {
    await this.pool.query("DELETE FROM auth_sessions WHERE id = $1", [id]);
  }

  async deleteByUser(userId: string): Promise<number> {
    return (await this.pool.query("DELETE FROM auth_sessions WHERE user_id = $1", [userId])).rowCount ?? 0;
  }

  async prune(nowMs: number): Promise<number> {
    return (await this.pool.query("DELETE FROM auth_sessions WHERE expires_at <= $1", [nowMs])).rowCount ?? 0;
  }
}

/**
 * Login counters in PostgreSQL (`login_counters`), shared by every process. {@link update} holds the rows' locks
 * for the whole read-decide-write: the missing rows are inserted first (ON CONFLICT DO NOTHING waits for a
 * concurrent insert of the same key), then read FOR UPDATE, keys in sorted order so two steps never deadlock.
 */
export class PgLoginCounterStore implements LoginCounterStore {
  constructor(private readonly pool: pg.Pool) {}

  async update<T>(keys: string[], decide: (current: (LoginCounter | null)[]) => CounterDecision<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("INSERT INTO login_counters (key, failures, locked_until, forget_at) SELECT k, 0, 0, 0 FROM unnest($1::text[]) AS k ORDER BY k ON CONFLICT (key) DO NOTHING", [sorted]);
      const { rows } = await client.query<{ key: string; failures: number; locked_until: string; forget_at: string }>(
        "SELECT key, failures, locked_until, forget_at FROM login_counters WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE",
        [sorted],
      );
      const byKey = new Map(rows.map((r) => [r.key, { failures: r.failures, locked_until: Number(r.locked_until), forget_at: Number(r.forget_at) }]));
      // A row this step just inserted (all zeros) is an absent counter.
      const current = keys.map((key) => {
        const row = byKey.get(key);
        return row && (row.failures > 0 || row.locked_until > 0 || row.forget_at > 0) ? row : null;
      });
      const { writes, result } = decide(current);
      const saved = keys.map((key, i) => [key, writes[i]] as const).filter((e): e is readonly [string, LoginCounter] => Boolean(e[1]));
      const removed = keys.filter((_, i) => writes[i] === null || (writes[i] === undefined && current[i] === null));
      if (saved.length) {
        await client.query(
          "UPDATE login_counters c SET failures = v.f, locked_until = v.l, forget_at = v.g FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[]) AS v(k, f, l, g) WHERE c.key = v.k",
          [saved.map((e) => e[0]), saved.map((e) => e[1].failures), saved.map((e) => e[1].locked_until), saved.map((e) => e[1].forget_at)],
        );
      }
      if (removed.length) await client.query("DELETE FROM login_counters WHERE key = ANY($1::text[])", [removed]);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async prune(nowMs: number): Promise<number> {
    return (await this.pool.query("DELETE FROM login_counters WHERE forget_at <= $1 AND locked_until <= $1", [nowMs])).rowCount ?? 0;
  }
}
