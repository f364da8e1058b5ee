// Storage interfaces of accounts and API keys. SQLite implements them today (sqlite-repositories.ts); the
// scale-out work adds PostgreSQL behind the same interfaces, so every method is async and small.

/** Upstream's two roles: `admin` (the first account, created by /initialize) and `user`. */
export type SystemRole = "admin" | "user";

/** A stored account (DeerFlow `User`). Timestamps are ISO strings. */
export interface UserRecord {
  /** UUID; the principal id, owner of threads, runs, files, agents and memory. */
  id: string;
  /** Unique, stored lower-cased. */
  email: string;
  /** `scrypt$...` hash, or null for an account without a local password. */
  password_hash: string | null;
  system_role: SystemRole;
  created_at: string;
  /** True when the account must finish setup (new email + password) before using the app. */
  needs_setup: boolean;
  /** Bumped on password change; sessions signed with another version are refused. */
  token_version: number;
  oauth_provider: string | null;
}

/** What {@link UserRepository.create} needs; the rest is filled in by the repository. */
export interface NewUser {
  email: string;
  password_hash: string;
  system_role: SystemRole;
  needs_setup?: boolean;
}

/** Raised by repositories when the email is already taken (mapped to upstream's 400 `email_already_exists`). */
export class EmailTakenError extends Error {
  constructor() {
    super("Email already registered");
    this.name = "EmailTakenError";
  }
}

/** Accounts. */
export interface UserRepository {
  /** The account with this id, or null. */
  getById(id: string): Promise<UserRecord | null>;
  /** The account with this email (case-insensitive), or null. */
  getByEmail(email: string): Promise<UserRecord | null>;
  /** Number of `admin` accounts. */
  countAdmins(): Promise<number>;
  /**
   * Creates an account. With `onlyIfNoAdmin`, the check and the insert are one atomic step, so two concurrent
   * first-boot requests cannot both create an admin.
   * @returns the new account, or null when `onlyIfNoAdmin` was set and an admin exists.
   * @throws EmailTakenError when the email is registered.
   */
  create(user: NewUser, options?: { onlyIfNoAdmin?: boolean }): Promise<UserRecord | null>;
  /**
   * Writes `email`, `password_hash`, `needs_setup` and `token_version` of `user`.
   * @throws EmailTakenError when the new email belongs to another account.
   */
  update(user: UserRecord): Promise<void>;
}

/** A stored API key. The secret itself is never stored: only its SHA-256. */
export interface ApiKeyRecord {
  id: string;
  user_id: string;
  name: string;
  /** The first characters of the key (`dfk_` + 8), shown in listings so a user can tell keys apart. */
  prefix: string;
  /** Hex SHA-256 of the whole key. */
  key_hash: string;
  created_at: string;
  last_used_at: string | null;
}

/** API keys. */
export interface ApiKeyRepository {
  /** Stores a new key. */
  create(key: ApiKeyRecord): Promise<void>;
  /** The key whose hash is `keyHash`, or null. */
  getByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  /** Keys of `userId`, newest first. */
  listByUser(userId: string): Promise<ApiKeyRecord[]>;
  /** Deletes key `id` if it belongs to `userId`; returns the deleted key or null (unknown or someone else's). */
  delete(id: string, userId: string): Promise<ApiKeyRecord | null>;
  /** Records a use of key `id` at `at` (ISO). */
  touch(id: string, at: string): Promise<void>;
}

/** A server-side session: what a session token's `sid` names. Ended by logout, or by a password change (all of them). */
export interface NewSession {
  /** Random id (128 bits, base64url), carried in the token. */
  id: string;
  user_id: string;
  /** ISO time of sign-in. */
  created_at: string;
  /** Epoch ms after which the session is dead (the token's own expiry). */
  expires_at: number;
}

/** What a live session resolves to: its account's current identity and token version (read in the same step). */
export interface LiveSession {
  user_id: string;
  /** Null when the session's account no longer exists. */
  user: Pick<UserRecord, "id" | "email" | "system_role" | "token_version"> | null;
}

/** Server-side sessions, in the auth database every gateway process shares. */
export interface SessionRepository {
  /** Stores a new session. */
  create(session: NewSession): Promise<void>;
  /**
   * The live session `id` (not expired at `nowMs`) with its account, or null when it was ended or has expired.
   * On the hot path of every cookie-authenticated request: one indexed lookup.
   */
  lookup(id: string, nowMs: number): Promise<LiveSession | null>;
  /** Ends session `id` (no-op when unknown). */
  delete(id: string): Promise<void>;
  /** Ends every session of `userId`. @returns how many were ended. */
  deleteByUser(userId: string): Promise<number>;
  /** Deletes sessions expired at `nowMs`. @returns how many. */
  prune(nowMs: number): Promise<number>;
}

/** A login counter (one per account or client address). Times are epoch ms. */
export interface LoginCounter {
  /** Attempts counted since the counter was last forgotten or cleared. */
  failures: number;
  /** Attempts are refused until then (0: not locked). */
  locked_until: number;
  /** After this (and once any lock has ended) the counter is forgotten. */
  forget_at: number;
}

/**
 * What a {@link LoginCounterStore.update} decision writes: per key (same order as the keys), a counter to store,
 * null to delete it, or undefined to leave it as it is.
 */
export interface CounterDecision<T> {
  writes: (LoginCounter | null | undefined)[];
  result: T;
}

/** Login counters, shared by every process on the same auth database. */
export interface LoginCounterStore {
  /**
   * Reads the counters of `keys` (null when absent), passes them to `decide` and writes what it returns, as one
   * atomic step: no other caller, in this process or another, reads or writes these keys in between.
   * @returns `decide`'s result.
   */
  update<T>(keys: string[], decide: (current: (LoginCounter | null)[]) => CounterDecision<T>): Promise<T>;
  /** Deletes counters forgotten at `nowMs` (forget time and lock both past). @returns how many. */
  prune(nowMs: number): Promise<number>;
}
