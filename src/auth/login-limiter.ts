// Failed-login lockout per client address (DeerFlow routers/auth.py _check_rate_limit / _record_login_failure):
// 5 failures lock the address for 5 minutes; a success clears it. In-process, like upstream: with several
// gateway processes each keeps its own table (the scale-out work can back this with Redis).

/** Result of {@link LoginLimiter.check}: allowed, or locked with the seconds until it lifts. */
export type LoginGate = { locked: false } | { locked: true; retryAfterSeconds: number };

/** Options of {@link LoginLimiter}. */
export interface LoginLimiterOptions {
  /** Failures that lock an address (default 5). */
  maxAttempts?: number;
  /** Lock duration in ms (default 300000). */
  lockoutMs?: number;
  /** Most addresses tracked (default 10000); beyond it, expired and then oldest entries are dropped. */
  maxTracked?: number;
  /** Clock in ms (tests). */
  now?: () => number;
}

interface Entry {
  failures: number;
  lockedUntil: number;
}

/** Per-address failure counters and lockouts. */
export class LoginLimiter {
  private readonly entries = new Map<string, Entry>();
  private readonly maxAttempts: number;
  private readonly lockoutMs: number;
  private readonly maxTracked: number;
  private readonly now: () => number;

  constructor(options: LoginLimiterOptions = {}) {
    this.maxAttempts = options.maxAttempts ?? 5;
    this.lockoutMs = options.lockoutMs ?? 300_000;
    this.maxTracked = options.maxTracked ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** Whether `address` may try to log in now. An expired lock is cleared here. */
  check(address: string): LoginGate {
    const entry = this.entries.get(address);
    if (!entry || entry.failures < this.maxAttempts) return { locked: false };
    const left = entry.lockedUntil - this.now();
    if (left <= 0) {
      this.entries.delete(address);
      return { locked: false };
    }
    return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil(left / 1000)) };
  }

  /** Counts a failure; the `maxAttempts`-th locks the address for the lockout period. */
  recordFailure(address: string): void {
    if (!this.entries.has(address) && this.entries.size >= this.maxTracked) this.evict();
    const entry = this.entries.get(address) ?? { failures: 0, lockedUntil: 0 };
    entry.failures += 1;
    if (entry.failures >= this.maxAttempts) entry.lockedUntil = this.now() + this.lockoutMs;
    // Re-insert so Map order is least-recently-failed first (what eviction drops).
    this.entries.delete(address);
    this.entries.set(address, entry);
  }

  /** Clears the counter of `address` after a successful login. */
  recordSuccess(address: string): void {
    this.entries.delete(address);
  }

  private evict(): void {
    const now = this.now();
    for (const [address, entry] of this.entries) {
      if (entry.failures >= this.maxAttempts && entry.lockedUntil <= now) this.entries.delete(address);
    }
    // Still full: drop the oldest half, unlocked counters first (they are the cheapest to lose).
    if (this.entries.size >= this.maxTracked) {
      const sorted = [...this.entries].sort((a, b) => a[1].lockedUntil - b[1].lockedUntil);
      for (const [address] of sorted.slice(0, Math.ceil(sorted.length / 2))) this.entries.delete(address);
    }
  }
}
