// The channel runtime's durable state (DeerFlow channel_connections persistence + dedupe_store.py + store.py):
// per-user connections, one-time connect codes, the platform conversation -> gateway thread map, inbound event ids
// (the dedupe store), the poll leases and open clarification questions, in `<home>/data/channels.sqlite` (opened through openSqlite: WAL, busy
// timeout), so every process of one host sees one copy. With `database.backend: postgres` the same contract lives in
// PostgreSQL (pg-store.ts) for processes on several hosts; Redis implementations of the dedupe store and the lease
// live in redis-coordination.ts.
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";

/** A binding of a platform identity to a gateway user (upstream `ChannelConnectionResponse` + owner). */
export interface ChannelConnection {
  id: string;
  owner_user_id: string;
  provider: string;
  /** `connected`, `broken` (the platform refused the bot's token), `revoked`. */
  status: string;
  external_account_id: string;
  external_account_name: string | null;
  workspace_id: string | null;
  /** Per-user runtime settings (`model_name`, `agent_name`), set by chat commands. */
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

/** A question the agent asked in a conversation, waiting for the user's answer (see the manager's clarification path). */
export interface PendingClarification {
  threadId: string;
  /** The sub-conversation the question was posted in (Slack `thread_ts`), where the answer's reply goes. */
  topicId: string | null;
}

/**
 * The channel runtime's durable state, on SQLite ({@link SqliteChannelStore}) or PostgreSQL (pg-store.ts): the same
 * contract on both, so every process sharing the store sees one copy.
 */
export interface ChannelStore extends DedupeStore, LeaseStore {
  listConnections(ownerUserId: string): Promise<ChannelConnection[]>;
  findByIdentity(provider: string, externalAccountId: string, workspaceId: string | null): Promise<ChannelConnection | null>;
  disconnect(id: string, ownerUserId: string): Promise<boolean>;
  setProviderStatus(provider: string, status: "broken" | "connected"): Promise<void>;
  patchSettings(id: string, patch: Record<string, unknown>): Promise<void>;
  createConnectCode(ownerUserId: string, provider: string, code: string, ttlMs: number, maxPending: number): Promise<boolean>;
  redeemConnectCode(provider: string, code: string, identity: { externalAccountId: string; name: string | null; workspaceId: string | null }): Promise<ChannelConnection | null>;
  getThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined): Promise<string | null>;
  setThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined, threadId: string | null): Promise<void>;
  /** Remembers the open question of `key` (provider, chat and user) for `ttlMs`, replacing an older one. */
  setPendingClarification(key: string, pending: PendingClarification, ttlMs: number): Promise<void>;
  /** Takes (and forgets) the open, unexpired question of `key`; null when there is none. */
  takePendingClarification(key: string): Promise<PendingClarification | null>;
  close(): Promise<void>;
}

/** Remembers inbound event ids: true from `tryRecord` for the first delivery of an id only, across processes. */
export interface DedupeStore {
  /** Records `key` for `ttlMs`; resolves true when it was new (handle the event), false for a duplicate. */
  tryRecord(key: string, ttlMs: number): Promise<boolean>;
  /** Forgets `key` (a failed handling: the platform's redelivery may try again). */
  release(key: string): Promise<void>;
}

/** A named lease held by one process at a time, taken over once its holder stops renewing it. */
export interface LeaseStore {
  /** Takes or renews the lease for `ttlMs`; resolves true when `holder` holds it now. */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up when `holder` holds it. */
  releaseLease(name: string, holder: string): Promise<void>;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS channel_connections (
  id TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, provider TEXT NOT NULL, status TEXT NOT NULL,
  external_account_id TEXT NOT NULL, external_account_name TEXT, workspace_id TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  UNIQUE (provider, external_account_id, workspace_id));
CREATE INDEX IF NOT EXISTS channel_connections_owner ON channel_connections (owner_user_id);
CREATE TABLE IF NOT EXISTS channel_connect_codes (
  code TEXT PRIMARY KEY, owner_user_id TEXT NOT NULL, provider TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS channel_threads (
  connection_id TEXT NOT NULL, conversation_id TEXT NOT NULL, topic_id TEXT NOT NULL DEFAULT '',
  thread_id TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (connection_id, conversation_id, topic_id));
CREATE TABLE IF NOT EXISTS channel_dedupe (key TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS channel_leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS channel_pending_clarifications (
  key TEXT PRIMARY KEY, thread_id TEXT NOT NULL, topic_id TEXT NOT NULL DEFAULT '', expires_at INTEGER NOT NULL);
`;

type Row = Omit<ChannelConnection, "metadata" | "workspace_id"> & { metadata: string; workspace_id: string };
const toConnection = (r: Row): ChannelConnection => ({ ...r, workspace_id: r.workspace_id || null, metadata: JSON.parse(r.metadata) as Record<string, unknown> });

/** The SQLite channel store: connections, connect codes, thread map, dedupe ids, leases and open questions (one file, WAL). */
export class SqliteChannelStore implements ChannelStore {
  constructor(private readonly db: Database.Database) {
    db.exec(SCHEMA);
  }

  /** The owner's connections, newest first. */
  async listConnections(ownerUserId: string): Promise<ChannelConnection[]> {
    return (this.db.prepare("SELECT * FROM channel_connections WHERE owner_user_id = ? AND status != 'revoked' ORDER BY updated_at DESC").all(ownerUserId) as Row[]).map(toConnection);
  }

  /** The live (`connected` or `broken`) connection of a platform identity, or null. */
  async findByIdentity(provider: string, externalAccountId: string, workspaceId: string | null): Promise<ChannelConnection | null> {
    const row = this.db.prepare("SELECT * FROM channel_connections WHERE provider = ? AND external_account_id = ? AND workspace_id = ? AND status != 'revoked'").get(provider, externalAccountId, workspaceId ?? "") as Row | undefined;
    return row ? toConnection(row) : null;
  }

  /** Revokes the owner's connection; false when it is not the owner's (another user's reads as missing). */
  async disconnect(id: string, ownerUserId: string): Promise<boolean> {
    const now = new Date().toISOString();
    const changed = this.db.prepare("UPDATE channel_connections SET status = 'revoked', updated_at = ? WHERE id = ? AND owner_user_id = ? AND status != 'revoked'").run(now, id, ownerUserId).changes;
    if (changed) this.db.prepare("DELETE FROM channel_threads WHERE connection_id = ?").run(id);
    return changed > 0;
  }

  /** Marks every live connection of a provider `broken` (its bot token was refused) or back to `connected`. */
  async setProviderStatus(provider: string, status: "broken" | "connected"): Promise<void> {
    this.db.prepare("UPDATE channel_connections SET status = ?, updated_at = ? WHERE provider = ? AND status IN ('connected', 'broken') AND status != ?").run(status, new Date().toISOString(), provider, status);
  }

  /** Merges `patch` into a connection's runtime settings. */
  async patchSettings(id: string, patch: Record<string, unknown>): Promise<void> {
    const row = this.db.prepare("SELECT metadata FROM channel_connections WHERE id = ?").get(id) as { metadata: string } | undefined;
    if (!row) return;
    const merged = { ...(JSON.parse(row.metadata) as Record<string, unknown>), ...patch };
    for (const [k, v] of Object.entries(merged)) if (v === null) delete merged[k];
    this.db.prepare("UPDATE channel_connections SET metadata = ?, updated_at = ? WHERE id = ?").run(JSON.stringify(merged), new Date().toISOString(), id);
  }

  /**
   * Makes a one-time connect code for the owner (upstream `create_oauth_state_within_cap`): expired codes go first,
   * and null when the owner already has `maxPending` live codes for the provider (the route answers 429).
   */
  async createConnectCode(ownerUserId: string, provider: string, code: string, ttlMs: number, maxPending: number): Promise<boolean> {
    const now = Date.now();
    return this.db.transaction(() => {
      this.db.prepare("DELETE FROM channel_connect_codes WHERE expires_at <= ?").run(now);
      const { n } = this.db.prepare("SELECT COUNT(*) AS n FROM channel_connect_codes WHERE owner_user_id = ? AND provider = ?").get(ownerUserId, provider) as { n: number };
      if (n >= maxPending) return false;
      this.db.prepare("INSERT INTO channel_connect_codes (code, owner_user_id, provider, expires_at) VALUES (?, ?, ?, ?)").run(code, ownerUserId, provider, now + ttlMs);
      return true;
    }).immediate();
  }

  /**
   * Spends a connect code and binds the identity to the code's owner (replacing an earlier binding of that
   * identity). Resolves the connection, or null for an unknown, spent, expired or other-provider code.
   */
  async redeemConnectCode(provider: string, code: string, identity: { externalAccountId: string; name: string | null; workspaceId: string | null }): Promise<ChannelConnection | null> {
    const now = Date.now();
    const iso = new Date(now).toISOString();
    const id = this.db.transaction(() => {
      const row = this.db.prepare("DELETE FROM channel_connect_codes WHERE code = ? AND provider = ? AND expires_at > ? RETURNING owner_user_id").get(code, provider, now) as { owner_user_id: string } | undefined;
      if (!row) return null;
      const ws = identity.workspaceId ?? "";
      const existing = this.db.prepare("SELECT id, owner_user_id FROM channel_connections WHERE provider = ? AND external_account_id = ? AND workspace_id = ?").get(provider, identity.externalAccountId, ws) as { id: string; owner_user_id: string } | undefined;
      if (existing) {
        // A new owner never inherits the previous owner's conversations.
        if (existing.owner_user_id !== row.owner_user_id) this.db.prepare("DELETE FROM channel_threads WHERE connection_id = ?").run(existing.id);
        this.db.prepare("UPDATE channel_connections SET owner_user_id = ?, status = 'connected', external_account_name = ?, metadata = '{}', updated_at = ? WHERE id = ?").run(row.owner_user_id, identity.name, iso, existing.id);
        return existing.id;
      }
      const newId = randomUUID();
      this.db.prepare("INSERT INTO channel_connections (id, owner_user_id, provider, status, external_account_id, external_account_name, workspace_id, created_at, updated_at) VALUES (?, ?, ?, 'connected', ?, ?, ?, ?, ?)")
        .run(newId, row.owner_user_id, provider, identity.externalAccountId, identity.name, ws, iso, iso);
      return newId;
    }).immediate();
    if (!id) return null;
    return toConnection(this.db.prepare("SELECT * FROM channel_connections WHERE id = ?").get(id) as Row);
  }

  /** The gateway thread of a conversation of a connection, or null. */
  async getThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined): Promise<string | null> {
    const row = this.db.prepare("SELECT thread_id FROM channel_threads WHERE connection_id = ? AND conversation_id = ? AND topic_id = ?").get(connectionId, conversationId, topicId ?? "") as { thread_id: string } | undefined;
    return row?.thread_id ?? null;
  }

  /** Maps a conversation to a thread (`null` forgets it: `/new`). */
  async setThreadId(connectionId: string, conversationId: string, topicId: string | null | undefined, threadId: string | null): Promise<void> {
    if (threadId === null) {
      this.db.prepare("DELETE FROM channel_threads WHERE connection_id = ? AND conversation_id = ? AND topic_id = ?").run(connectionId, conversationId, topicId ?? "");
      return;
    }
    this.db.prepare("INSERT INTO channel_threads (connection_id, conversation_id, topic_id, thread_id, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET thread_id = excluded.thread_id, updated_at = excluded.updated_at")
      .run(connectionId, conversationId, topicId ?? "", threadId, new Date().toISOString());
  }

  async tryRecord(key: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    // One statement: an expired id is taken over, a live one is left alone (changes = 0: a duplicate).
    const changes = this.db.prepare("INSERT INTO channel_dedupe (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE channel_dedupe.expires_at <= ?").run(key, now + ttlMs, now).changes;
    if (Math.random() < 0.01) this.db.prepare("DELETE FROM channel_dedupe WHERE expires_at <= ?").run(now);
    return changes > 0;
  }

  async release(key: string): Promise<void> {
    this.db.prepare("DELETE FROM channel_dedupe WHERE key = ?").run(key);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const changes = this.db.prepare("INSERT INTO channel_leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at WHERE channel_leases.holder = excluded.holder OR channel_leases.expires_at <= ?").run(name, holder, now + ttlMs, now).changes;
    return changes > 0;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.db.prepare("DELETE FROM channel_leases WHERE name = ? AND holder = ?").run(name, holder);
  }

  async setPendingClarification(key: string, pending: PendingClarification, ttlMs: number): Promise<void> {
    const now = Date.now();
    this.db.prepare("DELETE FROM channel_pending_clarifications WHERE expires_at <= ?").run(now);
    this.db.prepare("INSERT INTO channel_pending_clarifications (key, thread_id, topic_id, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET thread_id = excluded.thread_id, topic_id = excluded.topic_id, expires_at = excluded.expires_at")
      .run(key, pending.threadId, pending.topicId ?? "", now + ttlMs);
  }

  async takePendingClarification(key: string): Promise<PendingClarification | null> {
    const row = this.db.prepare("DELETE FROM channel_pending_clarifications WHERE key = ? RETURNING thread_id, topic_id, expires_at").get(key) as { thread_id: string; topic_id: string; expires_at: number } | undefined;
    return row && row.expires_at > Date.now() ? { threadId: row.thread_id, topicId: row.topic_id || null } : null;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
