// The channel store in PostgreSQL (`database.backend: postgres`): the same contract as SqliteChannelStore, so
// gateway processes on several hosts, each with its own DEER_FLOW_HOME, share one set of connections, connect
// codes, conversation -> thread mappings, dedupe ids, leases and open clarification questions. Expiry is judged by
// the database clock (`now()`), so hosts whose clocks drift still agree on what has expired. Upstream keeps the
// same state in its application database (dedupe_store.py's `webhook_deliveries`, store.py, channel_connections).
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { ChannelConnection, ChannelStore, PendingClarification } from "./store.js";
import { inTransaction, migrateUnderLock } from "../runtime/persistence/postgres/pg-transaction.js";

/** Advisory-lock key of the DDL, so processes starting together do not race on CREATE TABLE IF NOT EXISTS. */
const DDL_LOCK = 4694048;

/** Deletes expired dedupe ids about once in this many `tryRecord` calls (the table stays near the live window). */
const CLEANUP_EVERY = 100;

const DDL = [
  `CREATE TABLE IF NOT EXISTS channel_connections (
    id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, provider TEXT NOT NULL, status TEXT NOT NULL,
    external_account_id TEXT NOT NULL, external_account_name TEXT, workspace_id TEXT NOT NULL DEFAULT '',
    metadata JSONB NOT NULL DEFAULT '{}'::jsonb, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    UNIQUE (provider, external_account_id, workspace_id))`,
  "CREATE INDEX IF NOT EXISTS channel_connections_owner ON channel_connections (owner_user_id)",
  `CREATE TABLE IF NOT EXISTS channel_connect_codes (
    code TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, provider TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS channel_threads (
    connection_id TEXT NOT NULL, conversation_id TEXT NOT NULL, topic_id TEXT NOT NULL DEFAULT '',
    thread_id TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (connection_id, conversation_id, topic_id))`,
  "CREATE TABLE IF NOT EXISTS channel_dedupe (key TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL)",
  "CREATE INDEX IF NOT EXISTS channel_dedupe_expires ON channel_dedupe (expires_at)",
  "CREATE TABLE IF NOT EXISTS channel_leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)",
  `CREATE TABLE IF NOT EXISTS channel_pending_clarifications (
    key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, topic_id TEXT NOT NULL DEFAULT '', expires_at TIMESTAMPTZ NOT NULL)`,
];

/** `now() + ttlMs` in SQL, the interval bound as parameter `$n` (milliseconds). */
const expiresIn = (n: number) => `now() + make_interval(secs => $${n}::double precision / 1000)`;

type Row = Omit<ChannelConnection, "workspace_id"> & { workspace_id: string };
const toConnection = (r: Row): ChannelConnection => ({ ...r, workspace_id: r.workspace_id || null });

/**
 * {@link ChannelStore} on a pg pool (the store owns it and ends it on {@link PgChannelStore.close}). Call
 * {@link PgChannelStore.migrate} once before use.
 */
export class PgChannelStore implements ChannelStore {
  private calls = 0;

  constructor(private readonly pool: pg.Pool) {}

  /** Creates the tables (idempotent, serialised across processes by an advisory lock). */
  async migrate(): Promise<void> {
    await migrateUnderLock(this.pool, DDL_LOCK, DDL);
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  /** The owner's live connections, newest first. */
  async listConnections(ownerUserId: string): Promise<ChannelConnection[]> {
    const { rows } = await this.pool.query<Row>("SELECT * FROM channel_connections WHERE owner_user_id = $1 AND status != 'revoked' ORDER BY updated_at DESC", [ownerUserId]);
    return rows.map(toConnection);
  }

  /** The live (`connected` or `broken`) connection of a platform identity, or null. */
  async findByIdentity(provider: string, externalAccountId: string, workspaceId: string | null): Promise<ChannelConnection | null> {
    const { rows } = await this.pool.query<Row>(
      "SELECT * FROM channel_connections WHERE provider = $1 AND external_account_id = $2 AND workspace_id = $3 AND status != 'revoked'",
      [provider, externalAccountId, workspaceId ?? ""],
    );
    return rows[0] ? toConnection(rows[0]) : null;
  }

  /** Revokes the owner's connection and forgets its conversations; false when it is not the owner's. */
  async disconnect(id: string, ownerUserId: string): Promise<boolean> {
    return this.transaction(async (client) => {
      const { rowCount } = await client.query("UPDATE channel_connections SET status = 'revoked', updated_at = $1 WHERE id = $2 AND owner_user_id = $3 AND status != 'revoked'", [new Date().toISOString(), id, ownerUserId]);
      if (!rowCount) return false;
      await client.query("DELETE FROM channel_threads WHERE connection_id = $1", [id]);
      return true;
    });
  }

  /** Marks every live connection of a provider `broken` (its bot token was refused) or back to `connected`. */
  async setProviderStatus(provider: string, status: "broken" | "connected"): Promise<void> {
    await this.pool.query("UPDATE channel_connections SET status = $1, updated_at = $2 WHERE provider = $3 AND status IN ('connected', 'broken') AND status != $1", [status, new Date().toISOString(), provider]);
  }

  /** Merges `patch` into a connection's runtime settings in one statement; a null value removes its key. */
  async patchSettings(id: string, patch: Record<string, unknown>): Promise<void> {
    await this.pool.query("UPDATE channel_connections SET metadata = jsonb_strip_nulls(metadata || $1::jsonb), updated_at = $2 WHERE id = $3", [JSON.stringify(patch), new Date().toISOString(), id]);
  }

  /**
   * Makes a one-time connect code (upstream `create_oauth_state_within_cap`): false when the owner already has
   * `maxPending` live codes for the provider. Count and insert run under a per-owner advisory lock, so two
   * processes creating codes at once cannot both pass the cap.
   */
  async createConnectCode(ownerUserId: string, provider: string, code: string, ttlMs: number, maxPending: number): Promise<boolean> {
    return this.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`channel_codes:${ownerUserId}:${provider}`]);
      await client.query("DELETE FROM channel_connect_codes WHERE expires_at <= now()");
      const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM channel_connect_codes WHERE owner_user_id = $1 AND provider = $2", [ownerUserId, provider]);
      if (Number(rows[0].n) >= maxPending) return false;
      await client.query(`INSERT INTO channel_connect_codes (code, owner_user_id, provider, expires_at) VALUES ($1, $2, $3, ${expiresIn(4)})`, [code, ownerUserId, provider, ttlMs]);
      return true;
    });
  }

  /**
   * Spends a connect code and binds the identity to the code's owner (replacing an earlier binding of that
   * identity). The DELETE ... RETURNING spends the code once even when two processes redeem it together; the
   * identity's advisory lock serialises two codes redeemed for one identity. Null for an unknown, spent, expired
   * or other-provider code.
   */
  async redeemConnectCode(provider: string, code: string, identity: { externalAccountId: string; name: string | null; workspaceId: string | null }): Promise<ChannelConnection | null> {
    const ws = identity.workspaceId ?? "";
    return this.transaction(async (client) => {
      const spent = await client.query<{ owner_user_id: string }>("DELETE FROM channel_connect_codes WHERE code = $1 AND provider = $2 AND expires_at > now() RETURNING owner_user_id", [code, provider]);
      const owner = spent.rows[0]?.owner_user_id;
      if (!owner) return null;
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`channel_identity:${provider}:${identity.externalAccountId}:${ws}`]);
      const iso = new Date().toISOString();
      const { rows } = await client.query<{ id: string; owner_user_id: string }>("SELECT id, owner_user_id FROM channel_connections WHERE provider = $1 AND external_account_id = $2 AND workspace_id = $3", [provider, identity.externalAccountId, ws]);
      let id = rows[0]?.id;
      if (id) {
        // A new owner never inherits the previous owner's conversations.
        if (rows[0].owner_user_id !== owner) await client.query("DELETE FROM channel_threads WHERE connection_id = $1", [id]);
        await client.query("UPDATE channel_connections SET owner_user_id = $1, status = 'connected', external_account_name = $2, metadata = '{}'::jsonb, updated_at = $3 WHERE id = $4", [owner, identity.name, iso, id]);
      } else {
        id = randomUUID();
        await client.query(
          "INSERT INTO channel_connections (id, owner_user_id, provider, status, external_account_id, external_account_name, workspace_id, created_at, updated_at) VALUES ($1, $2, $3, 'connected', $4, $5, $6, $7, $7)",
          [id, owner, provider, identity.externalAccountId, identity.name, ws, iso],
        );
      }
      const row = await client.query<Row>("SELECT * FROM channel_connections WHERE id = $1", [id]);
      return toConnection(row.rows[0]);
    });
  }

  /** The gateway thread of a conversation of a connection, or null. */
  async getThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined): Promise<string | null> {
    const { rows } = await this.pool.query<{ thread_id: string }>("SELECT thread_id FROM channel_threads WHERE connection_id = $1 AND conversation_id = $2 AND topic_id = $3", [connectionId, conversationId, topicId ?? ""]);
    return rows[0]?.thread_id ?? null;
  }

  /** Maps a conversation to a thread (`null` forgets it: `/new`). */
  async setThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined, threadId: string | null): Promise<void> {
    if (threadId === null) {
      await this.pool.query("DELETE FROM channel_threads WHERE connection_id = $1 AND conversation_id = $2 AND topic_id = $3", [connectionId, conversationId, topicId ?? ""]);
      return;
    }
    await this.pool.query(
      "INSERT INTO channel_threads (connection_id, conversation_id, topic_id, thread_id, updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (connection_id, conversation_id, topic_id) DO UPDATE SET thread_id = excluded.thread_id, updated_at = excluded.updated_at",
      [connectionId, conversationId, topicId ?? "", threadId, new Date().toISOString()],
    );
  }

  /**
   * Records an inbound event id for `ttlMs`: one statement, so of two processes recording one id together exactly
   * one gets a row back. A live id is left alone (a duplicate); an expired one is taken over (upstream's
   * `ON CONFLICT ... DO UPDATE ... WHERE first_seen < now() - ttl`). Expired ids are swept now and then.
   */
  async tryRecord(key: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO channel_dedupe (key, expires_at) VALUES ($1, ${expiresIn(2)}) ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE channel_dedupe.expires_at <= now()`,
      [key, ttlMs],
    );
    if (++this.calls % CLEANUP_EVERY === 0) await this.sweepDedupe();
    return (rowCount ?? 0) > 0;
  }

  /** Deletes the expired dedupe ids (called every {@link CLEANUP_EVERY} records; public for tests). */
  async sweepDedupe(): Promise<number> {
    return (await this.pool.query("DELETE FROM channel_dedupe WHERE expires_at <= now()")).rowCount ?? 0;
  }

  async release(key: string): Promise<void> {
    await this.pool.query("DELETE FROM channel_dedupe WHERE key = $1", [key]);
  }

  /** Takes or renews a lease with one conditional upsert: it lands only when the holder is the same or the lease expired. */
  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO channel_leases (name, holder, expires_at) VALUES ($1, $2, ${expiresIn(3)}) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE channel_leases.holder = excluded.holder OR channel_leases.expires_at <= now()`,
      [name, holder, ttlMs],
    );
    return (rowCount ?? 0) > 0;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.pool.query("DELETE FROM channel_leases WHERE name = $1 AND holder = $2", [name, holder]);
  }

  async setPendingClarification(key: string, pending: PendingClarification, ttlMs: number): Promise<void> {
    await this.pool.query("DELETE FROM channel_pending_clarifications WHERE expires_at <= now()");
    await this.pool.query(
      `INSERT INTO channel_pending_clarifications (key, thread_id, topic_id, expires_at) VALUES ($1, $2, $3, ${expiresIn(4)}) ON CONFLICT (key) DO UPDATE SET thread_id = excluded.thread_id, topic_id = excluded.topic_id, expires_at = excluded.expires_at`,
      [key, pending.threadId, pending.topicId ?? "", ttlMs],
    );
  }

  /** Takes (and forgets) the open question of `key`: DELETE ... RETURNING, so one process gets it. */
  async takePendingClarification(key: string): Promise<PendingClarification | null> {
    const { rows } = await this.pool.query<{ thread_id: string; topic_id: string; live: boolean }>("DELETE FROM channel_pending_clarifications WHERE key = $1 RETURNING thread_id, topic_id, expires_at > now() AS live", [key]);
    const row = rows[0];
    return row?.live ? { threadId: row.thread_id, topicId: row.topic_id || null } : null;
  }

  /** Ends the store's pool. */
  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * Opens the channel store on `url` with its own small pool (4 connections: channel traffic is a few short
 * statements per message) and migrates it. @throws Error "cannot open database.url for channels: ..." when
 * PostgreSQL cannot be reached.
 */
export async function openPgChannelStore(url: string): Promise<PgChannelStore> {
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // An idle client that loses its server emits 'error' on the pool; without a listener that kills the process.
  pool.on("error", () => undefined);
  const store = new PgChannelStore(pool);
  try {
    await store.migrate();
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new Error(`cannot open database.url for channels: ${(err as Error).message}`);
  }
  return store;
}
