// Failed-login lockout (DeerFlow routers/auth.py _check_rate_limit / _record_login_failure, reworked). Upstream
// checks a per-address lock before the password check and counts the failure after it, in process memory: 60
// concurrent guesses all pass the check, and five failures on one account lock every account behind the address.
// Here an attempt is counted *before* the password check, in the same atomic step as the lock check, on the auth
// database (so every process shares the counters), per account and per address separately:
// - the account: 5 attempts, then a lock that doubles with each further failure (1 min, 2, 4, ... capped at 15);
// - the address: a limit high enough for an office behind one NAT or proxy (default 100), then upstream's 5 min.
// A right password hands its attempt back: the account's counter is cleared, the address's decremented.
import { createHash } from "node:crypto";
import type { LoginCounter, LoginCounterStore } from "./repositories.js";

/** Result of {@link LoginLimiter.begin}: allowed (the attempt is counted), or locked with the seconds until it lifts. */
export type LoginGate = { locked: false } | { locked: true; retryAfterSeconds: number };

/** How one kind of counter (account or address) locks. Times in ms. */
export interface LockoutPolicy {
  /** Attempts allowed before the lock (the last of them sets it, so concurrent ones are refused). */
  maxFailures: number;
  /** First lock's duration. */
  lockoutMs: number;
  /** Longest lock: each failure after the first lock doubles the previous one up to this. */
  maxLockoutMs: number;
  /** A counter with no attempt for this long is forgotten. */
  windowMs: number;
  /**
   * How long after a lock ends the count is kept, so the next failure locks again at once and for longer
   * (0: the count restarts when the lock ends, upstream's rule).
   */
  keepAfterLockMs: number;
}

/** Per-account default: 5 attempts, then 1 min doubling to 15 min; counts kept 1 h (about 100 guesses a day). */
export const ACCOUNT_POLICY: LockoutPolicy = { maxFailures: 5, lockoutMs: 60_000, maxLockoutMs: 900_000, windowMs: 3_600_000, keepAfterLockMs: 3_600_000 };
/** Per-address default: 100 failures (an office shares one address), then a 5 min lock, as upstream. */
export const ADDRESS_POLICY: LockoutPolicy = { maxFailures: 100, lockoutMs: 300_000, maxLockoutMs: 300_000, windowMs: 900_000, keepAfterLockMs: 0 };

/** Options of {@link LoginLimiter}. */
export interface LoginLimiterOptions {
  /** Where the counters live (the auth database: shared across processes on PostgreSQL). */
  store: LoginCounterStore;
  /** Overrides of {@link ACCOUNT_POLICY}. */
  account?: Partial<LockoutPolicy>;
  /** Overrides of {@link ADDRESS_POLICY} (the operator sets `maxFailures` with AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS). */
  address?: Partial<LockoutPolicy>;
  /** Forgotten counters are deleted at most this often, in ms (default 60000). */
  pruneEveryMs?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

/** Counter key: kind plus a hash of the value, so unknown emails typed at the login form are not stored in clear. */
const keyOf = (kind: "account" | "address", value: string) => `${kind}:${createHash("sha256").update(value).digest("base64url")}`;

/** The account a login names, as the account store matches it (trimmed, lower-cased). */
const accountOf = (email: string) => email.trim().toLowerCase();

/** Per-account and per-address login counters with atomic check-and-count. */
export class LoginLimiter {
  private readonly store: LoginCounterStore;
  private readonly account: LockoutPolicy;
  private readonly address: LockoutPolicy;
  private readonly pruneEveryMs: number;
  private readonly now: () => number;
  private lastPrune = 0;

  constructor(options: LoginLimiterOptions) {
    this.store = options.store;
    this.account = { ...ACCOUNT_POLICY, ...options.account };
    this.address = { ...ADDRESS_POLICY, ...options.address };
    this.pruneEveryMs = options.pruneEveryMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Checks and counts one login attempt from `address` for `email`, in one atomic step. Locked when either the
   * account or the address is locked; a refused attempt counts nowhere (it tried no password).
   * @throws the store's error (the login then fails: an unchecked attempt is never let through).
   */
  async begin(address: string, email: string): Promise<LoginGate> {
    const now = this.now();
    this.maybePrune(now);
    const policies = [this.account, this.address];
    return this.store.update<LoginGate>([keyOf("account", accountOf(email)), keyOf("address", address)], (current) => {
      const live = current.map((c, i) => liveCounter(c, policies[i], now));
      const lockedUntil = Math.max(...live.map((c) => c.locked_until));
      if (lockedUntil > now) return { writes: [undefined, undefined], result: { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((lockedUntil - now) / 1000)) } };
      return { writes: live.map((c, i) => counted(c, policies[i], now)), result: { locked: false } };
    });
  }

  /** Hands back the attempt of a right password: clears the account's counter and takes one off the address's. */
  async succeeded(address: string, email: string): Promise<void> {
    const now = this.now();
    await this.store.update([keyOf("account", accountOf(email)), keyOf("address", address)], (current) => {
      const addr = liveCounter(current[1], this.address, now);
      const failures = addr.failures - 1;
      // Below the limit again: a lock this very attempt set (by being the limit-th) is lifted with it.
      const stillLocked = failures >= this.address.maxFailures;
      const refund = failures <= 0 ? null : stillLocked ? { ...addr, failures } : { failures, locked_until: 0, forget_at: now + this.address.windowMs };
      return { writes: [null, refund], result: undefined };
    });
  }

  private maybePrune(now: number): void {
    if (now - this.lastPrune < this.pruneEveryMs) return;
    this.lastPrune = now;
    // Housekeeping only: a failed prune is retried next time and never fails a login.
    void this.store.prune(now).catch(() => undefined);
  }
}

/** `counter` as it stands at `now`: a forgotten one (or none) is a fresh zero. */
function liveCounter(counter: LoginCounter | null, policy: LockoutPolicy, now: number): LoginCounter {
  if (!counter || (counter.forget_at <= now && counter.locked_until <= now)) return { failures: 0, locked_until: 0, forget_at: 0 };
  // keepAfterLockMs 0: the count restarts once the lock has ended (forget_at is the lock's end then).
  if (policy.keepAfterLockMs === 0 && counter.locked_until > 0 && counter.locked_until <= now) return { failures: 0, locked_until: 0, forget_at: 0 };
  return counter;
}

/** `counter` with one more attempt: from the `maxFailures`-th on, locked for `lockoutMs` doubled per extra failure. */
function counted(counter: LoginCounter, policy: LockoutPolicy, now: number): LoginCounter {
  const failures = counter.failures + 1;
  const over = failures - policy.maxFailures;
  const lockedUntil = over >= 0 ? now + Math.min(policy.maxLockoutMs, policy.lockoutMs * 2 ** Math.min(over, 30)) : 0;
  const forgetAt = lockedUntil ? lockedUntil + policy.keepAfterLockMs : now + policy.windowMs;
  return { failures, locked_until: lockedUntil, forget_at: forgetAt };
}
