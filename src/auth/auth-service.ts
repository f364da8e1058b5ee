// Who a credential belongs to: session tokens and API keys resolved to a Principal, the session lifecycle and the
// API-key lifecycle. A session token names a server-side session (its `sid`), looked up with its account on every
// request, uncached: a logout or password change in any process ends it at the next request everywhere. API-key
// records and accounts read for API keys are cached (the TTL bounds how late another process's change is seen).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Principal } from "./principal.js";
import type { ApiKeyRecord, ApiKeyRepository, SessionRepository, UserRecord, UserRepository } from "./repositories.js";
import type { SessionTokens, TokenProblem } from "./session-token.js";
import { LRUCache } from "lru-cache";

/** Prefix of every API key (tells a key from a session token or a stray string at a glance). */
export const API_KEY_PREFIX = "dfk_";
/** How often expired sessions are deleted, at most (ms): they are refused on lookup anyway, this only bounds the table. */
const SESSION_PRUNE_EVERY_MS = 3_600_000;
/** Characters of a key kept in listings (`dfk_` + 8). */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

/** An API key as listed: never the secret, never its hash. */
export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/** Options of {@link AuthService}. */
export interface AuthServiceOptions {
  users: UserRepository;
  apiKeys: ApiKeyRepository;
  sessions: SessionRepository;
  tokens: SessionTokens;
  /**
   * How long a cached account or key record is trusted for API keys, in ms (default 30000). Writes made by this
   * process drop entries at once; the TTL bounds how late another gateway process's change is seen. Sessions do
   * not use it.
   */
  cacheTtlMs?: number;
  /** How often `last_used_at` is written per key, at most, in ms (default 60000). */
  touchEveryMs?: number;
  now?: () => number;
}

interface Cached<T> {
  value: T;
  at: number;
}

/** Resolves credentials to principals and manages API keys. */
export class AuthService {
  private readonly users: UserRepository;
  private readonly apiKeys: ApiKeyRepository;
  private readonly sessions: SessionRepository;
  readonly tokens: SessionTokens;
  private lastSessionPrune = 0;
  private readonly ttl: number;
  private readonly touchEvery: number;
  private readonly now: () => number;
  private readonly userCache = new LRUCache<string, Cached<UserRecord>>({ max: 10_000 });
  private readonly keyCache = new LRUCache<string, Cached<ApiKeyRecord>>({ max: 10_000 });

  constructor(options: AuthServiceOptions) {
    this.users = options.users;
    this.apiKeys = options.apiKeys;
    this.sessions = options.sessions;
    this.tokens = options.tokens;
    this.ttl = options.cacheTtlMs ?? 30_000;
    this.touchEvery = options.touchEveryMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** The account `id` (cached), or null. */
  async getUser(id: string): Promise<UserRecord | null> {
    const hit = this.userCache.get(id);
    if (hit && this.now() - hit.at < this.ttl) return hit.value;
    const user = await this.users.getById(id);
    if (user) this.userCache.set(id, { value: user, at: this.now() });
    return user;
  }

  /** The account `id` read from the store now (for decisions that must not act on a stale copy), or null. */
  async getFreshUser(id: string): Promise<UserRecord | null> {
    const user = await this.users.getById(id);
    if (user) this.userCache.set(id, { value: user, at: this.now() });
    else this.userCache.delete(id);
    return user;
  }

  /**
   * Writes `user` and drops its cached copy.
   * @throws EmailTakenError when the new email belongs to another account.
   */
  async updateUser(user: UserRecord): Promise<void> {
    this.userCache.delete(user.id);
    try {
      await this.users.update(user);
    } finally {
      this.userCache.delete(user.id);
    }
  }

  /**
   * Starts a server-side session for `user` (lasting the token lifetime) and signs its token.
   * @returns the session token (the `access_token` cookie's value).
   */
  async startSession(user: Pick<UserRecord, "id" | "token_version">): Promise<string> {
    const now = this.now();
    const id = randomBytes(16).toString("base64url");
    await this.sessions.create({ id, user_id: user.id, created_at: new Date(now).toISOString(), expires_at: now + this.tokens.lifetimeSeconds * 1000 });
    if (now - this.lastSessionPrune >= SESSION_PRUNE_EVERY_MS) {
      this.lastSessionPrune = now;
      // Housekeeping: expired sessions are refused by lookup anyway; a failed prune is retried next hour.
      void this.sessions.prune(now).catch(() => undefined);
    }
    return this.tokens.sign(user.id, user.token_version, id);
  }

  /** Ends the session `token` names, in every process; a token that is not ours (bad signature) ends nothing. */
  async endSession(token: string): Promise<void> {
    const claims = await this.tokens.verify(token);
    if (typeof claims !== "string" && claims.sid) await this.sessions.delete(claims.sid);
  }

  /** Ends every session of `userId`, in every process (a password change). */
  async endAllSessions(userId: string): Promise<void> {
    await this.sessions.deleteByUser(userId);
  }

  /**
   * The principal of a session token: valid signature, not expired, its session still exists (not logged out, not
   * ended by a password change, in any process), the account exists and its token version matches. The session
   * and the account are read in one uncached lookup per request (measured in bench/auth.bench.ts).
   * @returns the principal, or why it is refused (`token_expired`, `token_invalid`, `user_not_found`).
   */
  async principalFromSession(token: string): Promise<Principal | TokenProblem | "user_not_found"> {
    const claims = await this.tokens.verify(token);
    if (typeof claims === "string") return claims;
    // A token from before server-side sessions names none: it cannot be ended, so it is refused (sign in again).
    if (!claims.sid) return "token_invalid";
    const session = await this.sessions.lookup(claims.sid, this.now());
    if (!session || session.user_id !== claims.sub) return "token_invalid";
    const user = session.user;
    if (!user) return "user_not_found";
    if (user.token_version !== claims.ver) return "token_invalid";
    return { id: user.id, username: user.email, role: user.system_role, source: "session" };
  }

  /** The principal of an API key, or null for an unknown (or revoked) key or a deleted account. */
  async principalFromApiKey(key: string): Promise<Principal | null> {
    if (!key.startsWith(API_KEY_PREFIX) || key.length > 200) return null;
    const hash = hashApiKey(key);
    let record: ApiKeyRecord | null;
    const hit = this.keyCache.get(hash);
    const now = this.now();
    if (hit && now - hit.at < this.ttl) record = hit.value;
    else {
      record = await this.apiKeys.getByHash(hash);
      if (record) this.keyCache.set(hash, { value: record, at: now });
    }
    if (!record) return null;
    const user = await this.getUser(record.user_id);
    if (!user) return null;
    const lastUsed = record.last_used_at ? Date.parse(record.last_used_at) : 0;
    if (now - lastUsed >= this.touchEvery) {
      // Written at most once a minute per key: last-used is for people, not an audit log, and a write per request
      // would cost more than the whole lookup.
      record.last_used_at = new Date(now).toISOString();
      void this.apiKeys.touch(record.id, record.last_used_at).catch(() => {});
    }
    return { id: user.id, username: user.email, role: user.system_role, source: "api_key", apiKeyId: record.id };
  }

  /**
   * Creates an API key for `userId`.
   * @returns the listing view and the secret key (shown to the caller once, never stored).
   */
  async createApiKey(userId: string, name: string): Promise<{ view: ApiKeyView; key: string }> {
    const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
    const record: ApiKeyRecord = {
      id: randomUUID(),
      user_id: userId,
      name,
      prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
      key_hash: hashApiKey(key),
      created_at: new Date(this.now()).toISOString(),
      last_used_at: null,
    };
    await this.apiKeys.create(record);
    return { view: toView(record), key };
  }

  /** The keys of `userId`, newest first (no secrets). */
  async listApiKeys(userId: string): Promise<ApiKeyView[]> {
    return (await this.apiKeys.listByUser(userId)).map(toView);
  }

  /** Revokes key `id` of `userId`; it stops working at once in this process. @returns false when unknown or not theirs. */
  async revokeApiKey(userId: string, id: string): Promise<boolean> {
    const removed = await this.apiKeys.delete(id, userId);
    if (removed) this.keyCache.delete(removed.key_hash);
    return removed !== null;
  }
}

/** Hex SHA-256 of an API key: keys carry 256 random bits, so a fast hash is enough (no salt, no KDF). */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

function toView(record: ApiKeyRecord): ApiKeyView {
  return { id: record.id, name: record.name, prefix: record.prefix, created_at: record.created_at, last_used_at: record.last_used_at };
}
