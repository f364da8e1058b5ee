// SSO routes under /api/v1/auth (DeerFlow app/gateway/routers/auth.py, OIDC part): the login page's provider
// list, the start of a sign-in and the IdP's callback. A finished sign-in gets the same session, persistence and
// CSRF cookies as a local one; a refused one goes back to the login page with upstream's error code and a message.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { serialize as serializeCookie } from "cookie";
import { z } from "zod";
import { getAuthConfig, OIDC_PROVIDER_ID, type OidcProviderConfig } from "../src/config/auth-config.js";
import { appendSetCookie, cookiesOf, isSecureRequest, sessionCookiePolicy, setCsrfCookie, setSessionCookies } from "../src/auth/cookies.js";
import { OIDC_STATE_MAX_AGE } from "../src/auth/oidc-state.js";
import { SsoRefusal } from "../src/auth/sso-service.js";
import { doc } from "./openapi.js";

const StartQuery = z.looseObject({ next: z.string().max(2048).optional(), remember_me: z.enum(["true", "false", "1", "0"]).optional() });

type ProviderParams = { Params: { provider: string }; Querystring: Record<string, string | undefined> };

/**
 * Registers `GET providers`, `GET oauth/:provider` (302 to the IdP, state cookie set) and `GET callback/:provider`
 * (302 to the web app's `/auth/callback?next=...` signed in, or to `/login?error=<code>&message=...`).
 */
export async function ssoRoutes(app: FastifyInstance): Promise<void> {
  const { sso, service, lifetimeSeconds } = app.auth;
  const oidcConfig = () => getAuthConfig(app.deerflow.getAppConfig()).oidc;

  /** The enabled provider `id`, or a reply already sent (404 SSO off, 400 bad or unknown id). */
  const providerOf = (request: FastifyRequest<ProviderParams>, reply: FastifyReply): OidcProviderConfig | null => {
    const config = oidcConfig();
    const id = request.params.provider;
    if (!config.enabled) void reply.code(404).send({ detail: "SSO authentication is not enabled" });
    else if (!OIDC_PROVIDER_ID.test(id)) void reply.code(400).send({ detail: "Invalid provider ID" });
    else if (!Object.hasOwn(config.providers, id)) void reply.code(400).send({ detail: `Unknown SSO provider: ${id}` });
    else return config.providers[id];
    return null;
  };

  /** The callback URL: configured, else this gateway's own origin as the browser sees it (proxy-aware). */
  const redirectUriOf = (request: FastifyRequest, id: string, provider: OidcProviderConfig) =>
    provider.redirect_uri ?? `${isSecureRequest(request) ? "https" : "http"}://${request.host}/api/v1/auth/callback/${id}`;

  const stateCookie = (request: FastifyRequest, id: string, value: string, maxAge: number) =>
    serializeCookie(sso.stateCookies.name(id), value, { httpOnly: true, secure: isSecureRequest(request), sameSite: "lax", maxAge, path: `/api/v1/auth/callback/${id}` });

  const refuse = (request: FastifyRequest, reply: FastifyReply, id: string, refusal: SsoRefusal) => {
    request.log.warn({ provider: id, code: refusal.code, detail: refusal.detail }, `SSO sign-in refused: ${refusal.message}`);
    const params = new URLSearchParams({ error: refusal.code, message: refusal.message });
    return reply.redirect(`${oidcConfig().frontend_base_url ?? ""}/login?${params}`, 302);
  };

  app.get("/providers", { schema: doc("auth", "SSO providers for the login page: id, display_name, type, available") }, async () => ({
    providers: await sso.providers(oidcConfig()),
  }));

  app.get<ProviderParams>("/oauth/:provider", { schema: doc("auth", "Start SSO: 302 to the identity provider (state, nonce, PKCE)", { querystring: StartQuery }) }, async (request, reply) => {
    const provider = providerOf(request, reply);
    if (!provider) return reply;
    const id = request.params.provider;
    const query = StartQuery.safeParse(request.query);
    const rememberMe = !(query.success && (query.data.remember_me === "false" || query.data.remember_me === "0"));
    try {
      const start = await sso.start(id, provider, redirectUriOf(request, id, provider), query.success ? (query.data.next ?? null) : null, rememberMe);
      appendSetCookie(reply, stateCookie(request, id, start.cookieValue, OIDC_STATE_MAX_AGE));
      return reply.redirect(start.url, 302);
    } catch (err) {
      if (err instanceof SsoRefusal) return refuse(request, reply, id, err);
      throw err;
    }
  });

  app.get<ProviderParams>("/callback/:provider", { schema: doc("auth", "SSO callback: checks the response and ID token, signs in, 302 to the web app") }, async (request, reply) => {
    const provider = providerOf(request, reply);
    if (!provider) return reply;
    const id = request.params.provider;
    const query = new URLSearchParams(request.url.slice(request.url.indexOf("?") + 1 || request.url.length));
    let result;
    try {
      result = await sso.finish(id, provider, redirectUriOf(request, id, provider), query, cookiesOf(request)[sso.stateCookies.name(id)]);
    } catch (err) {
      if (err instanceof SsoRefusal) return refuse(request, reply, id, err);
      throw err;
    }
    if (result.created) request.log.info({ user_id: result.user.id, provider: id, role: result.user.system_role }, "SSO account created");
    const policy = sessionCookiePolicy(request, result.rememberMe, lifetimeSeconds);
    setSessionCookies(reply, await service.startSession(result.user), policy);
    setCsrfCookie(reply, policy);
    // One sign-in per state: the cookie goes with its first use.
    appendSetCookie(reply, stateCookie(request, id, "", 0));
    return reply.redirect(`${oidcConfig().frontend_base_url ?? ""}/auth/callback?next=${encodeURIComponent(result.next)}`, 302);
  });
}
