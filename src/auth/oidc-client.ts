// The relying-party side of OpenID Connect (DeerFlow app/gateway/auth/oidc.py), on `openid-client`: discovery
// (cached), the authorization URL with state, nonce and PKCE, and the code exchange with every ID token check
// (issuer, audience, signature against the provider's JWKS, expiry, nonce), then userinfo. Failures become
// {@link SsoRefusal}s whose messages are safe to show (no tokens, secrets or host paths).
import * as oidc from "openid-client";
import type { OidcProviderConfig } from "../config/auth-schema.js";

/** Upstream's login-page error codes (the web app has a text for each). */
export type SsoErrorCode = "sso_failed" | "sso_cancelled" | "sso_not_allowed" | "sso_account_exists";

/** A refused SSO sign-in: `code` for the web app, `message` for people (safe to show). */
export class SsoRefusal extends Error {
  /**
   * @param detail For the log only: the library's own account of a failure (oauth4webapi messages name the check,
   *   never a token or secret).
   */
  constructor(
    readonly code: SsoErrorCode,
    message: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = "SsoRefusal";
  }
}

/** What a sign-in proved about the user, after every check (upstream `OIDCIdentity`). */
export interface OidcIdentity {
  provider: string;
  /** The IdP's `sub`. */
  subject: string;
  /** Lower-cased, from the mapped email claim; null when the IdP sent none. */
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** The random values of one authorization request, kept in the browser's state cookie until the callback. */
export interface AuthorizationChecks {
  state: string;
  nonce: string | null;
  codeVerifier: string | null;
}

/** Options of {@link OidcClients}. */
export interface OidcClientsOptions {
  /** Discovery and token requests give up after this many seconds (default 5). */
  timeoutSeconds?: number;
  /** How long a discovered configuration is reused, in ms (default 300000, upstream's 5 minutes). */
  cacheTtlMs?: number;
  /** How long a failed discovery is remembered, in ms (default 15000), so the login page does not wait on a dead IdP. */
  failureTtlMs?: number;
  now?: () => number;
}

interface CacheEntry {
  at: number;
  config: Promise<oidc.Configuration>;
  failed?: boolean;
}

const ENDPOINT_OVERRIDES = ["authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"] as const;

/** Discovered provider configurations, cached per provider entry, and the flows over them. */
export class OidcClients {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly timeout: number;
  private readonly ttl: number;
  private readonly failureTtl: number;
  private readonly now: () => number;

  constructor(options: OidcClientsOptions = {}) {
    this.timeout = options.timeoutSeconds ?? 5;
    this.ttl = options.cacheTtlMs ?? 300_000;
    this.failureTtl = options.failureTtlMs ?? 15_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The provider's configuration: its discovery document (whose `issuer` must equal the configured one), the
   * endpoint overrides applied, ID token signatures checked against its JWKS.
   * @throws SsoRefusal (`sso_failed`) when discovery fails.
   */
  async configuration(id: string, provider: OidcProviderConfig): Promise<oidc.Configuration> {
    const key = JSON.stringify([id, provider]);
    const hit = this.cache.get(key);
    const now = this.now();
    if (hit && now - hit.at < (hit.failed ? this.failureTtl : this.ttl)) return hit.config;
    if (this.cache.size > 100) this.cache.clear();
    const entry: CacheEntry = { at: now, config: this.discover(provider) };
    entry.config.catch(() => (entry.failed = true));
    this.cache.set(key, entry);
    return entry.config;
  }

  /** Whether the provider's discovery document answers (the login page lists the provider as unavailable otherwise). */
  async available(id: string, provider: OidcProviderConfig): Promise<boolean> {
    return this.configuration(id, provider).then(
      () => true,
      () => false,
    );
  }

  private async discover(provider: OidcProviderConfig): Promise<oidc.Configuration> {
    const issuer = new URL(provider.issuer);
    const auth = clientAuth(provider);
    const metadata = { client_secret: provider.client_secret ?? undefined };
    const execute = issuer.protocol === "http:" ? [oidc.allowInsecureRequests] : [];
    let config: oidc.Configuration;
    try {
      config = await oidc.discovery(issuer, provider.client_id, metadata, auth, { execute, timeout: this.timeout });
    } catch (err) {
      throw new SsoRefusal("sso_failed", `The identity provider's discovery document at ${issuer.origin} could not be read (${describe(err)})`);
    }
    const overrides = Object.fromEntries(ENDPOINT_OVERRIDES.filter((k) => provider[k]).map((k) => [k, provider[k]]));
    if (Object.keys(overrides).length) config = new oidc.Configuration({ ...config.serverMetadata(), ...overrides }, provider.client_id, metadata, auth);
    for (const step of execute) step(config);
    config.timeout = this.timeout;
    // Without this openid-client trusts the ID token from the token endpoint on TLS alone; we verify its signature.
    oidc.enableNonRepudiationChecks(config);
    return config;
  }

  /**
   * Starts authorization code flow: fresh state, nonce (when `nonce_enabled`) and PKCE verifier (S256, when
   * `pkce_enabled`), and the URL to send the browser to.
   */
  async authorizationUrl(id: string, provider: OidcProviderConfig, redirectUri: string): Promise<{ url: string; checks: AuthorizationChecks }> {
    const config = await this.configuration(id, provider);
    const checks: AuthorizationChecks = {
      state: oidc.randomState(),
      nonce: provider.nonce_enabled ? oidc.randomNonce() : null,
      codeVerifier: provider.pkce_enabled ? oidc.randomPKCECodeVerifier() : null,
    };
    const params: Record<string, string> = { redirect_uri: redirectUri, scope: provider.scopes.join(" "), state: checks.state };
    if (checks.nonce) params.nonce = checks.nonce;
    if (checks.codeVerifier) {
      params.code_challenge = await oidc.calculatePKCECodeChallenge(checks.codeVerifier);
      params.code_challenge_method = "S256";
    }
    return { url: oidc.buildAuthorizationUrl(config, params).href, checks };
  }

  /**
   * Finishes the flow: exchanges the code (with the PKCE verifier) and checks the ID token (issuer, audience,
   * signature via JWKS, expiry, nonce, state), then reads userinfo (its `sub` must match) for missing claims.
   * @param query The callback's query string. @param checks What the state cookie kept.
   * @throws SsoRefusal naming what failed.
   */
  async exchange(id: string, provider: OidcProviderConfig, redirectUri: string, query: URLSearchParams, checks: AuthorizationChecks): Promise<OidcIdentity> {
    const config = await this.configuration(id, provider);
    const current = new URL(redirectUri);
    current.search = query.toString();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(
        config,
        current,
        { expectedState: checks.state, expectedNonce: checks.nonce ?? undefined, pkceCodeVerifier: checks.codeVerifier ?? undefined, idTokenExpected: true },
        { redirect_uri: redirectUri },
      );
    } catch (err) {
      const inner = (err as { cause?: unknown }).cause;
      throw new SsoRefusal("sso_failed", refusalMessage(err), inner instanceof Error ? inner.message.slice(0, 200) : undefined);
    }
    const claims: Record<string, unknown> = { ...tokens.claims() };
    const subject = String(claims.sub);
    if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
      try {
        Object.assign(claims, await oidc.fetchUserInfo(config, tokens.access_token, subject));
      } catch {
        // As upstream: the ID token's claims stand alone when userinfo is unavailable.
      }
    }
    return identityOf(id, provider, subject, claims);
  }
}

function clientAuth(provider: OidcProviderConfig): oidc.ClientAuth {
  if (provider.token_endpoint_auth_method === "none") return oidc.None();
  const secret = provider.client_secret ?? undefined;
  return provider.token_endpoint_auth_method === "client_secret_basic" ? oidc.ClientSecretBasic(secret) : oidc.ClientSecretPost(secret);
}

/** The identity from merged claims, through the provider's claim mapping. */
function identityOf(id: string, provider: OidcProviderConfig, subject: string, claims: Record<string, unknown>): OidcIdentity {
  const map = provider.claim_mapping;
  const email = claims[map.email];
  const verified = claims[map.email_verified];
  const name = claims[map.name];
  return {
    provider: id,
    subject,
    email: typeof email === "string" && email.includes("@") ? email.trim().toLowerCase() : null,
    // Some IdPs (Cognito) send the flag as a string.
    emailVerified: verified === true || verified === "true",
    name: typeof name === "string" ? name : null,
  };
}

/** A short, safe cause: the error's code or class, never a URL's query or a token. */
function describe(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string }; name?: string; message?: string };
  return e.cause?.code ?? e.code ?? e.name ?? "error";
}

const CLAIM_MESSAGES: Record<string, string> = {
  aud: "The ID token was issued for another client (audience mismatch)",
  iss: "The ID token was issued by another issuer (issuer mismatch)",
  nonce: "The ID token's nonce does not match this sign-in (replayed or foreign token)",
  azp: "The ID token was issued for another client (authorized party mismatch)",
};

/** The people-facing reason of a failed code exchange or ID token check. */
export function refusalMessage(err: unknown): string {
  const e = err as { code?: string; error?: string; message?: string; cause?: unknown };
  if (e.error === "invalid_grant") return "The identity provider refused the authorization code (invalid_grant): it was already used, has expired, or belongs to another sign-in";
  if (e.error) return `The identity provider refused the token request (${e.error.slice(0, 64)})`;
  // openid-client wraps oauth4webapi's error (generic message) around the one that says what failed.
  const inner = (e.cause instanceof Error ? e.cause : e) as { code?: string; message?: string; cause?: { claim?: string } };
  const message = `${inner.message ?? ""} ${e.message ?? ""}`;
  const claim = inner.cause?.claim;
  if (/signature verification failed|no applicable keys/i.test(message)) return "The ID token's signature does not verify against the identity provider's published keys (JWKS)";
  if (e.code === "OAUTH_JWT_TIMESTAMP_CHECK_FAILED") return claim === "exp" ? "The ID token has expired" : "The ID token's time claims are not valid now";
  if (e.code === "OAUTH_JWT_CLAIM_COMPARISON_FAILED" && claim && CLAIM_MESSAGES[claim]) return CLAIM_MESSAGES[claim];
  if (/"?state"? /i.test(message)) return "The sign-in response does not match this browser's request (state mismatch)";
  if (/timed out|abort|fetch failed|ECONNREFUSED/i.test(message)) return "The identity provider did not answer the token request";
  return "The sign-in with the identity provider could not be completed";
}
