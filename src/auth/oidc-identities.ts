// Links between SSO identities (provider id + the IdP's `sub`) and local accounts (upstream stores
// `oauth_provider` + `oauth_id` on the user row; a table of our own keeps the `users` schema untouched). SQLite and
// PostgreSQL implementations; an account and its link are created in one transaction.
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";
import type pg from "pg";
import { EmailTakenError, type SystemRole, type UserRecord } from "./repositories.js";

/** An SSO account to create: the identity it is linked to and the account's email and role. */
export interface NewOidcUser {
  provider: string;
  subject: string;
  email: string;
  system_role: SystemRole;
}

/** SSO identity links. */
export interface OidcIdentityRepository {
  /** The account linked to (`provider`, `subject`), or null. */
  findUser(provider: string, subject: string): Promise<UserRecord | null>;
  /**
   * Creates an account without a local password (`oauth_provider` = the provider id) and its link, atomically.
   * When a concurrent callback linked the same identity first, returns that account.
   * @throws EmailTakenError when another account owns the email.
   */
  createLinkedUser(user: NewOidcUser): Promise<UserRecord>;
}

const LINK_TABLE = `CREATE TABLE IF NOT EXISTS oidc_identities (
  provider TEXT NOT NULL, subject TEXT NOT NULL, user_id TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (provider, subject))`;
const LINK_INDEX = "CREATE INDEX IF NOT EXISTS oidc_identities_user ON oidc_identities (user_id)";

const isUnique = (err: unknown) => ["SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY", "23505"].includes((err as { code?: string }).code ?? "");
const isLinkConflict = (err: unknown) => /oidc_identities/.test(String((err as Error).message) + String((err as { constraint?: string }).constraint ?? ""));

interface SqliteUserRow extends Omit<UserRecord, "needs_setup"> {
  needs_setup: number | boolean;
}
const toUser = (row: SqliteUserRow | undefined): UserRecord | null => (row ? { ...row, needs_setup: row.needs_setup === 1 || row.needs_setup === true } : null);

/** Links in the gateway's SQLite database (`oidc_identities`, created if missing). */
export class SqliteOidcIdentityRepository implements OidcIdentityRepository {
  private readonly byIdentity: Database.Statement;
  private readonly insertUser: Database.Statement;
  private readonly insertLink: Database.Statement;

  constructor(private readonly db: Database.Database) {
    db.exec(`${LINK_TABLE}; ${LINK_INDEX}`);
    this.byIdentity = db.prepare("SELECT u.* FROM oidc_identities l JOIN users u ON u.id = l.user_id WHERE l.provider = ? AND l.subject = ?");
    this.insertUser = db.prepare("INSERT INTO users (id, email, password_hash, system_role, created_at, needs_setup, token_version, oauth_provider) VALUES (?, ?, NULL, ?, ?, 0, 0, ?)");
    this.insertLink = db.prepare("INSERT INTO oidc_identities (provider, subject, user_id, created_at) VALUES (?, ?, ?, ?)");
  }

  async findUser(provider: string, subject: string): Promise<UserRecord | null> {
    return toUser(this.byIdentity.get(provider, subject) as SqliteUserRow | undefined);
  }

  async createLinkedUser(user: NewOidcUser): Promise<UserRecord> {
    const id = randomUUID();
    const now = new Date().toISOString();
    const create = this.db.transaction(() => {
      // better-sqlite3 is synchronous: a link made by another process shows up as a primary-key violation.
      const linked = this.byIdentity.get(user.provider, user.subject) as SqliteUserRow | undefined;
      if (linked) return toUser(linked)!;
      this.insertUser.run(id, user.email.toLowerCase(), user.system_role, now, user.provider);
      this.insertLink.run(user.provider, user.subject, id, now);
      return toUser(this.db.prepare("SELECT * FROM users WHERE id = ?").get(id) as SqliteUserRow)!;
    });
    try {
      return create.immediate();
    } catch (err) {
      if (!isUnique(err)) throw err;
      const linked = await this.findUser(user.provider, user.subject);
      if (linked) return linked;
      throw new EmailTakenError();
    }
  }
}

const USER_COLUMNS = "u.id, u.email, u.password_hash, u.system_role, u.created_at, u.needs_setup, u.token_version, u.oauth_provider";

/** Links in PostgreSQL (`oidc_identities`, created on first use), shared by every gateway process. */
export class PgOidcIdentityRepository implements OidcIdentityRepository {
  private ready: Promise<unknown> | null = null;

  constructor(private readonly pool: pg.Pool) {}

  private migrate(): Promise<unknown> {
    this.ready ??= this.pool.query(`${LINK_TABLE}; ${LINK_INDEX}`).catch((err) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  async findUser(provider: string, subject: string): Promise<UserRecord | null> {
    await this.migrate();
    const { rows } = await this.pool.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM oidc_identities l JOIN users u ON u.id = l.user_id WHERE l.provider = $1 AND l.subject = $2`, [provider, subject]);
    return rows[0] ?? null;
  }

  async createLinkedUser(user: NewOidcUser): Promise<UserRecord> {
    await this.migrate();
    const client = await this.pool.connect();
    const id = randomUUID();
    const now = new Date().toISOString();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<UserRecord>(
        "INSERT INTO users (id, email, password_hash, system_role, created_at, needs_setup, token_version, oauth_provider) VALUES ($1, $2, NULL, $3, $4, false, 0, $5) RETURNING id, email, password_hash, system_role, created_at, needs_setup, token_version, oauth_provider",
        [id, user.email.toLowerCase(), user.system_role, now, user.provider],
      );
      await client.query("INSERT INTO oidc_identities (provider, subject, user_id, created_at) VALUES ($1, $2, $3, $4)", [user.provider, user.subject, id, now]);
      await client.query("COMMIT");
      return rows[0];
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      if (!isUnique(err)) throw err;
      const linked = await this.findUser(user.provider, user.subject);
      if (linked) return linked;
      if (isLinkConflict(err)) throw err;
      throw new EmailTakenError();
    } finally {
      client.release();
    }
  }
}
