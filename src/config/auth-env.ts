// Authentication settings read from the environment at start-up (DeerFlow app/gateway/auth/config.py,
// auth_disabled.py, routers/auth.py _trusted_proxies). The only module that reads auth-related env variables.
import { isIP } from "node:net";

/** Auth settings of the process. */
export interface AuthEnv {
  /** `DEER_FLOW_AUTH_DISABLED=1`: every request runs as the default user (local trials and tests only). */
  disabled: boolean;
  /** `DEER_FLOW_ENV` (or `ENVIRONMENT`) is `production` / `prod`. */
  production: boolean;
  /** `AUTH_JWT_SECRET`, or null to use (or create) `<home>/.jwt_secret`. */
  jwtSecret: string | null;
  /** `AUTH_TRUSTED_PROXIES`: addresses / CIDRs whose `X-Forwarded-For` / `X-Real-IP` name the client. */
  trustedProxies: string[];
  /** `AUTH_TOKEN_EXPIRY_DAYS` (1..30, default 7): session lifetime in days. */
  tokenExpiryDays: number;
  /**
   * `AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS` (1..1000000, default 100): failed logins from one client address (all
   * accounts together) before it is locked for 5 minutes. Each account also has its own, stricter limit.
   */
  loginMaxFailuresPerAddress: number;
}

const PRODUCTION_VALUES = new Set(["prod", "production"]);

/** True when `entry` is an IP address or an IP/prefix CIDR. */
function isAddressOrCidr(entry: string): boolean {
  const [addr, prefix, extra] = entry.split("/");
  if (extra !== undefined || !isIP(addr)) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return Number.isInteger(bits) && bits >= 0 && bits <= (isIP(addr) === 4 ? 32 : 128);
}

/**
 * Reads `DEER_FLOW_AUTH_DISABLED` (exactly `1` disables, upstream's rule), `DEER_FLOW_ENV` / `ENVIRONMENT`,
 * `AUTH_JWT_SECRET`, `AUTH_TRUSTED_PROXIES` (comma-separated IPs or CIDRs), `AUTH_TOKEN_EXPIRY_DAYS` and
 * `AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS`.
 * @throws Error when a trusted-proxy entry is not an address or CIDR, or the expiry or the address limit is not an
 *   integer in its range
 *   (a typo in a security setting must stop the start, not be skipped).
 */
export function readAuthEnv(env: NodeJS.ProcessEnv = process.env): AuthEnv {
  const trustedProxies = (env.AUTH_TRUSTED_PROXIES ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  for (const entry of trustedProxies) {
    if (!isAddressOrCidr(entry)) throw new Error(`AUTH_TRUSTED_PROXIES: '${entry}' is not an IP address or CIDR`);
  }
  const rawDays = env.AUTH_TOKEN_EXPIRY_DAYS?.trim();
  const tokenExpiryDays = rawDays ? Number(rawDays) : 7;
  if (!Number.isInteger(tokenExpiryDays) || tokenExpiryDays < 1 || tokenExpiryDays > 30) {
    throw new Error(`AUTH_TOKEN_EXPIRY_DAYS must be an integer in 1..30, got '${rawDays}'`);
  }
  const rawFailures = env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS?.trim();
  const loginMaxFailuresPerAddress = rawFailures ? Number(rawFailures) : 100;
  if (!Number.isInteger(loginMaxFailuresPerAddress) || loginMaxFailuresPerAddress < 1 || loginMaxFailuresPerAddress > 1_000_000) {
    throw new Error(`AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS must be an integer in 1..1000000, got '${rawFailures}'`);
  }
  const production = [env.DEER_FLOW_ENV, env.ENVIRONMENT].some((v) => PRODUCTION_VALUES.has((v ?? "").trim().toLowerCase()));
  return {
    disabled: env.DEER_FLOW_AUTH_DISABLED === "1",
    production,
    jwtSecret: env.AUTH_JWT_SECRET?.trim() || null,
    trustedProxies,
    tokenExpiryDays,
    loginMaxFailuresPerAddress,
  };
}

/**
 * Refuses `DEER_FLOW_AUTH_DISABLED=1` in production. Upstream silently ignores the flag there; we stop instead,
 * so an operator never believes auth is off (or on) when it is not.
 * @throws Error naming both variables when auth is disabled and the environment is production.
 */
export function assertAuthEnvAllowed(authEnv: Pick<AuthEnv, "disabled" | "production">): void {
  if (authEnv.disabled && authEnv.production) {
    throw new Error("DEER_FLOW_AUTH_DISABLED=1 is refused when DEER_FLOW_ENV=production: authentication cannot be turned off in production");
  }
}
