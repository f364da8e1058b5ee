// The auth gate (DeerFlow app/gateway/auth_middleware.py + csrf_middleware.py): every request gets a principal
// from its API key or session cookie before any route runs; protected routes without one answer 401; cookie-
// authenticated state-changing requests must pass the double-submit CSRF check (403).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AuthService } from "./auth-service.js";
import { ACCESS_TOKEN_COOKIE, cookiesOf, csrfProblem, isAllowedAuthOrigin } from "./cookies.js";
import type { LoginLimiter } from "./login-limiter.js";
import { DEFAULT_PRINCIPAL, type Principal } from "./principal.js";
import type { SsoService } from "./sso-service.js";

/** Everything the auth gate and the auth routes share (decorated on the app as `auth`). */
export interface AuthRuntime {
  service: AuthService;
  limiter: LoginLimiter;
  /** `DEER_FLOW_AUTH_DISABLED=1`: requests without valid credentials run as the default user. */
  disabled: boolean;
  /** Session lifetime in seconds. */
  lifetimeSeconds: number;
  /** Whether a browser origin may call the API (the CORS decision), for the login-CSRF Origin check. */
  originAllowed: (origin: string) => boolean;
  /** SSO sign-in over OpenID Connect (`auth.oidc`). */
  sso: SsoService;
}

declare module "fastify" {
  interface FastifyInstance {
    auth: AuthRuntime;
  }
}

/** Auth routes anyone may call (upstream `_PUBLIC_EXACT_PATHS`). `/me` and `/change-password` are not public. */
const PUBLIC_EXACT = new Set([
  "/api/v1/auth/login/local",
  "/api/v1/auth/register",
  "/api/v1/auth/logout",
  "/api/v1/auth/setup-status",
  "/api/v1/auth/initialize",
  "/api/v1/auth/providers",
  "/health",
  // Kubernetes probes (routes/health.ts): liveness and readiness, no sign-in.
  "/healthz",
  "/readyz",
  "/docs",
  // The API description, like /docs (its UI reads /docs/json).
  "/openapi.json",
]);
/** Path prefixes anyone may call (the SSO routes upstream serves there; `/docs/...` assets; IM platform webhooks, verified by their signatures). */
const PUBLIC_PREFIXES = ["/docs/", "/api/v1/auth/oauth/", "/api/v1/auth/callback/", "/api/channels/webhooks/"];
/** Session-creating routes: exempt from the double-submit token (none exists yet) but Origin-checked. */
const LOGIN_ROUTES = new Set(["/api/v1/auth/login/local", "/api/v1/auth/logout", "/api/v1/auth/register", "/api/v1/auth/initialize"]);
/** State-changing requests that upstream exempts from the CSRF check. */
const CSRF_EXEMPT = new Set(["/api/v1/auth/me"]);
const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The request path without query string or trailing slash. */
export function routePath(url: string): string {
  const q = url.indexOf("?");
  const p = q === -1 ? url : url.slice(0, q);
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

/** Whether `path` is served without authentication. */
export function isPublicPath(path: string): boolean {
  return PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/** The API key of a request: `x-api-key`, or an `Authorization: Bearer` value. Null when neither is sent. */
function apiKeyOf(request: FastifyRequest): string | null {
  const header = request.headers["x-api-key"];
  const key = Array.isArray(header) ? header[0] : header;
  if (key) return key.trim();
  const authorization = request.headers.authorization;
  if (authorization && /^bearer\s+/i.test(authorization)) return authorization.replace(/^bearer\s+/i, "").trim();
  return null;
}

type Resolution = { principal: Principal } | { refusal: { code: string; message: string } } | null;

const MESSAGES: Record<string, string> = {
  token_expired: "Token error: expired",
  token_invalid: "Token error: invalid",
  user_not_found: "User not found",
};

/** The principal the request's credentials name, why they are refused, or null when it carries none. */
async function resolve(service: AuthService, request: FastifyRequest): Promise<Resolution> {
  const apiKey = apiKeyOf(request);
  if (apiKey) {
    const principal = await service.principalFromApiKey(apiKey);
    return principal ? { principal } : { refusal: { code: "token_invalid", message: "Invalid API key" } };
  }
  const token = request.headers.cookie ? cookiesOf(request)[ACCESS_TOKEN_COOKIE] : undefined;
  if (!token) return null;
  const result = await service.principalFromSession(token);
  return typeof result === "string" ? { refusal: { code: result, message: MESSAGES[result] } } : { principal: result };
}

const deny = (reply: FastifyReply, status: number, detail: unknown) => reply.code(status).send({ detail });

/**
 * Installs the gate on `app` (root scope, so it covers every route, including ones registered later):
 * decorates `auth` and `request.principal`, and adds an `onRequest` hook that
 * 1. lets CORS preflights through (no credentials are sent on them);
 * 2. resolves the principal from `x-api-key` / `Authorization: Bearer` (API keys) or the `access_token` cookie;
 *    bad credentials are 401 on protected routes and ignored on public ones (a stale cookie must not block login);
 * 3. with auth disabled, falls back to the default principal instead of answering 401;
 * 4. on state-changing requests (auth enabled): Origin check on the login routes (403 "Cross-site auth request
 *    denied."), double-submit CSRF check when the principal came from the cookie (403).
 */
export function installAuth(app: FastifyInstance, runtime: AuthRuntime): void {
  app.decorate("auth", runtime);
  app.decorateRequest("principal", null);
  app.addHook("onRequest", async (request, reply) => {
    if (request.method === "OPTIONS") {
      request.principal = runtime.disabled ? DEFAULT_PRINCIPAL : null;
      return;
    }
    const path = routePath(request.url);
    const resolution = await resolve(runtime.service, request);
    if (resolution && "principal" in resolution) request.principal = resolution.principal;
    else if (runtime.disabled) request.principal = DEFAULT_PRINCIPAL;
    else if (!isPublicPath(path)) {
      return deny(reply, 401, resolution?.refusal ?? { code: "not_authenticated", message: "Authentication required" });
    }
    if (runtime.disabled || !STATE_CHANGING.has(request.method)) return;
    if (LOGIN_ROUTES.has(path)) {
      if (!isAllowedAuthOrigin(request, runtime.originAllowed)) return deny(reply, 403, "Cross-site auth request denied.");
      return;
    }
    if (request.principal?.source === "session" && !CSRF_EXEMPT.has(path)) {
      const problem = csrfProblem(request);
      if (problem) return deny(reply, 403, problem);
    }
  });
}
