// Session and CSRF cookies (DeerFlow app/gateway/auth/session_cookie.py and csrf_middleware.py): names, flags and
// lifetimes the DeerFlow web app expects, and the double-submit / Origin checks.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { parse as parseCookie, serialize as serializeCookie, type SerializeOptions } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";

/** The HttpOnly session cookie; the web app's server side reads it by this name. */
export const ACCESS_TOKEN_COOKIE = "access_token";
/** Remembers the user's "remember me" choice, so a re-issued session keeps the same persistence. */
export const SESSION_PERSISTENCE_COOKIE = "deerflow_session_persistent";
/** The double-submit CSRF cookie (JS-readable; the web app echoes it in {@link CSRF_HEADER}). */
export const CSRF_COOKIE = "csrf_token";
/** Header carrying the CSRF token on state-changing requests. */
export const CSRF_HEADER = "x-csrf-token";

/** The request's cookies (parsed once per request). */
export function cookiesOf(request: FastifyRequest): Record<string, string | undefined> {
  const header = request.headers.cookie;
  return header ? parseCookie(header) : {};
}

const firstValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.split(",")[0]?.trim() || undefined;

/**
 * Whether the browser reached us over https: the socket, or a proxy's `X-Forwarded-Proto` / `Forwarded: proto=`.
 * Trusted without a proxy list, as upstream: a client that lies gets a Secure cookie it cannot send back over http,
 * which harms only itself.
 */
export function isSecureRequest(request: FastifyRequest): boolean {
  if (request.protocol === "https") return true;
  const forwarded = firstValue(request.headers.forwarded)?.match(/proto=(?:"?)([a-z]+)/i)?.[1];
  return (forwarded ?? firstValue(request.headers["x-forwarded-proto"]) ?? "").toLowerCase() === "https";
}

/** Whether the request's host is loopback (`localhost`, `*.localhost`, 127/8, ::1), where http cookies may persist. */
function isLoopbackHost(request: FastifyRequest): boolean {
  const host = (request.hostname ?? "").replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** Flags of the session cookies: Secure behind https; persistent (Max-Age) only when asked and safe. */
export interface CookiePolicy {
  /** The user's "remember me" choice (kept in the persistence cookie for later re-issues). */
  remember: boolean;
  secure: boolean;
  /** Seconds, or undefined for a browser-session cookie. */
  maxAge: number | undefined;
}

/**
 * Upstream's policy: `remember_me` (default: the persistence cookie, else true) gives a persistent cookie over
 * https or on a loopback host; on plain http elsewhere the cookie lasts the browser session only.
 */
export function sessionCookiePolicy(request: FastifyRequest, rememberMe: boolean | null | undefined, lifetimeSeconds: number): CookiePolicy {
  const remembered = cookiesOf(request)[SESSION_PERSISTENCE_COOKIE];
  const remember = rememberMe ?? (remembered === "0" ? false : true);
  const secure = isSecureRequest(request);
  const persistent = remember && (secure || isLoopbackHost(request));
  return { remember, secure, maxAge: persistent ? lifetimeSeconds : undefined };
}

/** Adds a serialized Set-Cookie line to the reply, keeping those already set. */
export function appendSetCookie(reply: FastifyReply, value: string): void {
  const existing = reply.getHeader("set-cookie");
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing.map(String) : [String(existing)];
  reply.header("set-cookie", [...list, value]);
}

function setCookie(reply: FastifyReply, name: string, value: string, options: SerializeOptions): void {
  appendSetCookie(reply, serializeCookie(name, value, { path: "/", ...options }));
}

/** Sets the HttpOnly, SameSite=Lax session cookie and the persistence cookie. */
export function setSessionCookies(reply: FastifyReply, token: string, policy: CookiePolicy): void {
  setCookie(reply, ACCESS_TOKEN_COOKIE, token, { httpOnly: true, secure: policy.secure, sameSite: "lax", maxAge: policy.maxAge });
  setCookie(reply, SESSION_PERSISTENCE_COOKIE, policy.remember ? "1" : "0", { httpOnly: true, secure: policy.secure, sameSite: "lax", maxAge: policy.maxAge });
}

/** Sets a fresh JS-readable, SameSite=Strict CSRF cookie with the session cookie's lifetime (so the pair expires together). */
export function setCsrfCookie(reply: FastifyReply, policy: CookiePolicy): void {
  setCookie(reply, CSRF_COOKIE, randomBytes(48).toString("base64url"), { httpOnly: false, secure: policy.secure, sameSite: "strict", maxAge: policy.maxAge });
}

/** Expires the session, persistence and CSRF cookies. */
export function clearAuthCookies(reply: FastifyReply, secure: boolean): void {
  setCookie(reply, ACCESS_TOKEN_COOKIE, "", { httpOnly: true, secure, sameSite: "lax", maxAge: 0 });
  setCookie(reply, CSRF_COOKIE, "", { secure, sameSite: "strict", maxAge: 0 });
  setCookie(reply, SESSION_PERSISTENCE_COOKIE, "", { httpOnly: true, secure, sameSite: "lax", maxAge: 0 });
}

/** Double-submit check: the CSRF cookie and header are present and equal. @returns the refusal message, or null. */
export function csrfProblem(request: FastifyRequest): string | null {
  const cookie = cookiesOf(request)[CSRF_COOKIE];
  const header = request.headers[CSRF_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  if (!cookie || !value) return "CSRF token missing. Include X-CSRF-Token header.";
  const a = Buffer.from(cookie);
  const b = Buffer.from(value);
  if (a.length !== b.length || !timingSafeEqual(a, b)) return "CSRF token mismatch.";
  return null;
}

/** `scheme://host[:port]` of an Origin value, lower-cased with default ports dropped, or null when not an origin. */
function normalizeOrigin(value: string): string | null {
  try {
    const url = new URL(value.trim());
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password || (url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) return null;
    return url.origin.toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Login-CSRF guard for the session-creating routes (upstream `is_allowed_auth_origin`): a browser request may
 * come from the gateway's own origin or an allowed origin; requests without `Origin` (curl, servers) pass.
 * @param allowedOrigin The CORS decision for an origin (`*` is not honoured here, as upstream).
 */
export function isAllowedAuthOrigin(request: FastifyRequest, allowedOrigin: (origin: string) => boolean): boolean {
  const origin = request.headers.origin;
  if (!origin) return true;
  const normalized = normalizeOrigin(origin);
  if (!normalized) return false;
  const forwardedHost = firstValue(request.headers["x-forwarded-host"]);
  const host = forwardedHost ?? request.headers.host;
  const own = host ? normalizeOrigin(`${isSecureRequest(request) ? "https" : "http"}://${host}`) : null;
  return normalized === own || allowedOrigin(normalized);
}
