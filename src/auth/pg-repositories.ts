// PostgreSQL implementations of the account and API-key repositories (`database.backend: postgres`): every
// gateway process sees the same accounts and keys. Tables come from the runtime migrations (pg-stores.ts).
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { EmailTakenError, type ApiKeyRecord, type ApiKeyRepository, type NewUser, type UserRecord, type UserRepository } from "./repositories.js";

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
