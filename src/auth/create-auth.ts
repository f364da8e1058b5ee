// Assembles the auth runtime from the environment and buildApp's options: the switch (refused in production),
// the signing secret, the session lifetime, the trusted proxies, the login limiter (per account and per address,
// on the auth database) and the credential service (server-side sessions).
import type { Logger } from "pino";
import { assertAuthEnvAllowed, readAuthEnv } from "../config/auth-env.js";
import type { Persistence } from "../runtime/persistence/persistence.js";
import type { AuthRuntime } from "./auth-plugin.js";
import { AuthService } from "./auth-service.js";
import { LoginLimiter } from "./login-limiter.js";
import { loadJwtSecret, SessionTokens } from "./session-token.js";
import { SsoService } from "./sso-service.js";

/** Inputs of {@link createAuthRuntime}; unset fields come from the environment ({@link readAuthEnv}). */
export interface CreateAuthOptions {
  /** Runtime home, where `.jwt_secret` is kept when `AUTH_JWT_SECRET` is unset. */
  home: string;
  authDisabled?: boolean;
  trustedProxies?: string[];
  /** Allowed browser origins and the CORS decision, reused by the login-CSRF Origin check. */
  corsOrigins: string[];
  originAllowed: (origin: string, allowed: readonly string[]) => boolean;
  env?: NodeJS.ProcessEnv;
}

/**
 * Resolves the auth settings before anything is opened.
 * @returns the trusted proxies (for Fastify's `trustProxy`) and a `runtime(persistence, logger)` factory that
 *   builds the {@link AuthRuntime} over the opened stores and logs the auth mode (a loud warning when disabled).
 * @throws Error when auth is disabled in production, an auth env variable is malformed, or the secret file cannot
 *   be read or created.
 */
export function createAuthRuntime(options: CreateAuthOptions): { trustedProxies: string[]; runtime(persistence: Persistence, logger: Logger): AuthRuntime } {
  const env = readAuthEnv(options.env);
  const disabled = options.authDisabled ?? env.disabled;
  assertAuthEnvAllowed({ disabled, production: env.production });
  // Auth on: the secret is settled (and its file created) before the server starts. Auth off: only if a session
  // is ever signed or verified, so a trial server leaves no secret behind.
  let loaded: { secret: string; source: "env" | "file" } | null = disabled ? null : loadJwtSecret(env.jwtSecret, options.home);
  const secret = () => (loaded ??= loadJwtSecret(env.jwtSecret, options.home)).secret;
  const lifetimeSeconds = env.tokenExpiryDays * 24 * 3600;
  const trustedProxies = options.trustedProxies ?? env.trustedProxies;
  // `*` lets any site call the API with CORS, but never lets a foreign page sign a browser in (upstream's rule).
  const explicit = options.corsOrigins.filter((o) => o !== "*");
  return {
    trustedProxies,
    runtime(persistence, logger) {
      if (disabled) {
        logger.warn("DEER_FLOW_AUTH_DISABLED=1: AUTHENTICATION IS OFF. Every request without credentials runs as the default user with the admin role. Never use this on a shared or public server.");
      } else if (loaded?.source === "file") {
        logger.info("AUTH_JWT_SECRET is not set: sessions are signed with the secret in DEER_FLOW_HOME/.jwt_secret");
      }
      return {
        service: new AuthService({ users: persistence.users, apiKeys: persistence.apiKeys, sessions: persistence.sessions, tokens: new SessionTokens(secret, lifetimeSeconds) }),
        limiter: new LoginLimiter({ store: persistence.loginCounters, address: { maxFailures: env.loginMaxFailuresPerAddress } }),
        disabled,
        lifetimeSeconds,
        originAllowed: (origin) => options.originAllowed(origin, explicit),
        sso: new SsoService({ users: persistence.users, identities: persistence.oidcIdentities, secret }),
      };
    },
  };
}
