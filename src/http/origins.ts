// Browser origin and Host checks shared by CORS, the state-changing request guard and (for cookie sessions) the
// auth layer. Pure functions over header values, plus the Fastify hooks that apply them.
import { isIP } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Methods that change state: a browser may send them cross-site without a preflight only as "simple" requests. */
export const STATE_CHANGING_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Whether a browser `origin` may call the API: `*` allows all; `http://localhost` allows that host on any port;
 * requests without an Origin header (curl, servers, the SDK in Node) are not CORS requests and always pass.
 * The literal origin `null` (sandboxed frames, `file:` pages) passes only when listed.
 */
export function corsOriginAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (!origin) return true;
  if (allowed.includes("*")) return true;
  const bare = origin.replace(/:\d+$/, "");
  return allowed.includes(origin) || allowed.includes(bare);
}

/**
 * Whether `origin` names the host the request was sent to (`Host`, or `X-Forwarded-Host` behind a proxy): a page
 * served under the gateway's own address (a reverse proxy in front of both) is not cross-site. The Host itself is
 * checked against the allowlist ({@link hostAllowed}) first.
 */
function isSameOrigin(origin: string, headers: Record<string, string | string[] | undefined>): boolean {
  const forwarded = headers["x-forwarded-host"];
  const host = (typeof forwarded === "string" && forwarded ? forwarded.split(",")[0] : headers.host) as string | undefined;
  if (!host) return false;
  try {
    return new URL(origin).host.toLowerCase() === host.trim().toLowerCase();
  } catch {
    return false;
  }
}

/**
 * Why a request must be refused as a cross-site write, or null when it may go on. Only state-changing methods
 * ({@link STATE_CHANGING_METHODS}) are checked: an `Origin` that is neither allowed nor the request's own host is
 * refused, and so is a request
 * without `Origin` whose `Sec-Fetch-Site` says `cross-site` (a browser that left Origin out). Requests from
 * non-browser clients carry neither header and pass. This is what stops a page on another site from posting a
 * multipart upload or a run, which browsers send without a CORS preflight.
 * @param headers Request headers (lower-case names, as Node gives them).
 * @param allowed Allowed origins, same format as {@link corsOriginAllowed}.
 */
export function crossSiteWriteProblem(method: string, headers: Record<string, string | string[] | undefined>, allowed: readonly string[]): string | null {
  if (!STATE_CHANGING_METHODS.has(method.toUpperCase())) return null;
  const origin = headers.origin;
  if (typeof origin === "string" && origin) {
    if (corsOriginAllowed(origin, allowed) || isSameOrigin(origin, headers)) return null;
    return `Origin ${JSON.stringify(origin.slice(0, 200))} is not allowed to change state on this gateway`;
  }
  const site = headers["sec-fetch-site"];
  if (site === "cross-site") return "Cross-site requests without an allowed Origin cannot change state on this gateway";
  return null;
}

/** Host names allowed by default: loopback names. IP literals are always allowed (DNS rebinding needs a name). */
export const DEFAULT_ALLOWED_HOSTS: readonly string[] = ["localhost", "*.localhost"];

/** The host name of a `Host` header value, lower-cased, without port or IPv6 brackets; null when malformed. */
export function hostNameOf(hostHeader: string): string | null {
  const value = hostHeader.trim().toLowerCase();
  if (!value) return null;
  if (value.startsWith("[")) {
    const end = value.indexOf("]");
    return end > 0 ? value.slice(1, end) : null;
  }
  const colon = value.lastIndexOf(":");
  const name = colon >= 0 && value.indexOf(":") === colon ? value.slice(0, colon) : value;
  return name.replace(/\.$/, "") || null;
}

/**
 * Whether a `Host` header names this gateway: IP literals always (a rebinding attack needs a DNS name), names
 * listed in `allowed` (exact, or `*.example.com` for sub-domains; `*` alone allows any name). A request without
 * a Host header (HTTP/1.0 tools) passes.
 */
export function hostAllowed(hostHeader: string | undefined, allowed: readonly string[]): boolean {
  if (hostHeader === undefined) return true;
  const name = hostNameOf(hostHeader);
  if (!name) return false;
  if (isIP(name)) return true;
  for (const entry of allowed) {
    const e = entry.trim().toLowerCase();
    if (e === "*" || e === name) return true;
    if (e.startsWith("*.") && name.endsWith(e.slice(1))) return true;
  }
  return false;
}

/** Options of {@link installRequestGuards}. */
export interface RequestGuardOptions {
  /** Browser origins allowed to change state (the CORS list). */
  origins: readonly string[];
  /** Host names the gateway answers to (see {@link hostAllowed}). */
  hosts: readonly string[];
}

/**
 * Installs two `onRequest` checks for every route: the Host allowlist ({@link hostAllowed}; 403 `Host not
 * allowed`, against DNS rebinding of a gateway bound to a private address) and the cross-site write check
 * ({@link crossSiteWriteProblem}; 403). Register before the routes.
 */
export function installRequestGuards(app: FastifyInstance, options: RequestGuardOptions): void {
  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    if (!hostAllowed(request.headers.host, options.hosts)) {
      return reply.code(403).send({ detail: "Host not allowed; add it to DEER_FLOW_ALLOWED_HOSTS to serve it" });
    }
    const problem = crossSiteWriteProblem(request.method, request.headers, options.origins);
    if (problem) return reply.code(403).send({ detail: problem });
  });
}
