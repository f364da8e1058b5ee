// Who is making a request. Every route reads the caller through principalOf(); the run worker turns the
// principal's id into the run context's user_id (src/agents/run-context.ts), the only place a user id comes from.
import type { FastifyRequest } from "fastify";
import { DEFAULT_USER_ID } from "../agents/run-context.js";

/** How a principal was authenticated. */
export type PrincipalSource = "session" | "api_key" | "auth_disabled";

/** The authenticated caller of a request. */
export interface Principal {
  /** The user id: owner of threads, runs, files, agents and memory. */
  id: string;
  /** Login name (email for local accounts). */
  username: string;
  /** Upstream's roles: `admin` may manage users; `user` sees only its own data. */
  role: "admin" | "user";
  source: PrincipalSource;
  /** Id of the API key used, when `source` is `api_key`. */
  apiKeyId?: string;
}

/** The principal every request gets when auth is disabled (`DEER_FLOW_AUTH_DISABLED=1`). */
export const DEFAULT_PRINCIPAL: Principal = Object.freeze({ id: DEFAULT_USER_ID, username: DEFAULT_USER_ID, role: "admin", source: "auth_disabled" }) as Principal;

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hook before any route handler runs; null only on public routes of an auth-enabled server. */
    principal: Principal | null;
  }
}

/**
 * The caller of `request`. Routes that own data call this; the auth hook has already answered 401 for a
 * protected route without a principal, so a null here is a programming error.
 * @throws Error when no principal was resolved (a protected route registered outside the auth hook).
 */
export function principalOf(request: FastifyRequest): Principal {
  const principal = request.principal;
  if (!principal) throw new Error("no principal on a protected route");
  return principal;
}
