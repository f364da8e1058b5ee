// SSO sign-in over OpenID Connect (DeerFlow routers/auth.py `/providers`, `/oauth/{provider}`,
// `/callback/{provider}` and auth/user_provisioning.py): the provider list with availability, the start of a
// sign-in, and its callback: state bound to the browser, the code exchange and ID token checks, then the
// provisioning policy (email required and verified, allowed domains, auto-creation, admin emails). A refused
// sign-in creates nothing.
import { createHash, timingSafeEqual } from "node:crypto";
import type { OidcAuthConfig, OidcProviderConfig } from "../config/auth-schema.js";
import { OidcClients, SsoRefusal, type OidcIdentity } from "./oidc-client.js";
import type { OidcIdentityRepository } from "./oidc-identities.js";
import { OidcStateCookies, type OidcStatePayload } from "./oidc-state.js";
import { EmailTakenError, type UserRecord, type UserRepository } from "./repositories.js";

export { SsoRefusal } from "./oidc-client.js";

/** A provider as the login page lists it (upstream's fields, plus `available`). */
export interface SsoProviderView {
  id: string;
  display_name: string;
  type: "oidc";
  /** False when the IdP's discovery document cannot be read now (the button would fail). */
  available: boolean;
}

/** Where a started sign-in goes: the IdP URL and the state cookie to set. */
export interface SsoStart {
  url: string;
  cookieName: string;
  cookieValue: string;
}

/** A finished sign-in: the account, whether it was created, and where the browser goes next. */
export interface SsoResult {
  user: UserRecord;
  created: boolean;
  next: string;
  rememberMe: boolean;
}

/** Options of {@link SsoService}. */
export interface SsoServiceOptions {
  users: UserRepository;
  identities: OidcIdentityRepository;
  /** The session signing secret (the state cookie's key is derived from it). */
  secret: () => string;
  clients?: OidcClients;
}

/** Upstream's `validate_next_param`: a relative path only (no `//`, scheme, backslash or colon), else null. */
export function safeNextPath(next: string | null | undefined): string | null {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.includes("\\") || next.includes(":")) return null;
  return next.length <= 2048 ? next : null;
}

/** SSO sign-in. */
export class SsoService {
  readonly clients: OidcClients;
  readonly stateCookies: OidcStateCookies;
  private readonly users: UserRepository;
  private readonly identities: OidcIdentityRepository;

  constructor(options: SsoServiceOptions) {
    this.users = options.users;
    this.identities = options.identities;
    this.clients = options.clients ?? new OidcClients();
    this.stateCookies = new OidcStateCookies(options.secret);
  }

  /** The configured providers for the login page, each with whether its IdP answers discovery now. */
  async providers(config: OidcAuthConfig): Promise<SsoProviderView[]> {
    if (!config.enabled) return [];
    const entries = Object.entries(config.providers);
    const available = await Promise.all(entries.map(([id, p]) => this.clients.available(id, p)));
    return entries.map(([id, p], i) => ({ id, display_name: p.display_name, type: "oidc" as const, available: available[i] }));
  }

  /**
   * Starts a sign-in with provider `id`.
   * @throws SsoRefusal when the IdP's discovery fails.
   */
  async start(id: string, provider: OidcProviderConfig, redirectUri: string, next: string | null, rememberMe: boolean): Promise<SsoStart> {
    const { url, checks } = await this.clients.authorizationUrl(id, provider, redirectUri);
    const payload: OidcStatePayload = { ...checks, provider: id, next: safeNextPath(next) ?? "/workspace", rememberMe };
    return { url, cookieName: this.stateCookies.name(id), cookieValue: await this.stateCookies.seal(payload) };
  }

  /**
   * Finishes a sign-in: the state cookie must exist, be ours, unexpired and match `state`; then the code exchange
   * and every ID token check; then the provisioning policy.
   * @param cookie The state cookie's value. @param query The callback's query.
   * @throws SsoRefusal naming what was refused; nothing is created then.
   */
  async finish(id: string, provider: OidcProviderConfig, redirectUri: string, query: URLSearchParams, cookie: string | undefined): Promise<SsoResult> {
    const error = query.get("error");
    if (error) throw new SsoRefusal(error === "access_denied" ? "sso_cancelled" : "sso_failed", `The identity provider ended the sign-in (${error.slice(0, 64)})`);
    const state = query.get("state");
    if (!query.get("code") || !state) throw new SsoRefusal("sso_failed", "The callback lacks the code or state parameter");
    const saved = await this.stateCookies.open(cookie, id);
    if (!saved) throw new SsoRefusal("sso_failed", "This sign-in was not started in this browser or took longer than 5 minutes; start it again");
    if (!sameString(saved.state, state)) throw new SsoRefusal("sso_failed", "The sign-in response does not match this browser's request (state mismatch)");
    const identity = await this.clients.exchange(id, provider, redirectUri, query, saved);
    const { user, created } = await this.provision(provider, identity);
    return { user, created, next: safeNextPath(saved.next) ?? "/workspace", rememberMe: saved.rememberMe };
  }

  /**
   * Upstream's `get_or_provision_oidc_user`, with the email policy applied on every sign-in (not only the first):
   * a domain removed from `allowed_email_domains` locks its users out at once. An email owned by another account
   * is never linked automatically (an SSO login must not take over a password account).
   */
  private async provision(provider: OidcProviderConfig, identity: OidcIdentity): Promise<{ user: UserRecord; created: boolean }> {
    const email = this.checkEmail(provider, identity);
    const linked = await this.identities.findUser(identity.provider, identity.subject);
    if (linked) return { user: linked, created: false };
    if (await this.users.getByEmail(email)) throw accountExists();
    if (!provider.auto_create_users) throw new SsoRefusal("sso_not_allowed", "Automatic account creation is disabled for this provider; ask an administrator for an account");
    const admin = provider.admin_emails.some((e) => e.trim().toLowerCase() === email);
    try {
      const user = await this.identities.createLinkedUser({ provider: identity.provider, subject: identity.subject, email, system_role: admin ? "admin" : "user" });
      return { user, created: true };
    } catch (err) {
      if (err instanceof EmailTakenError) throw accountExists();
      throw err;
    }
  }

  /** The account email for `identity` under the provider's policy. @throws SsoRefusal (`sso_not_allowed`). */
  private checkEmail(provider: OidcProviderConfig, identity: OidcIdentity): string {
    if (!identity.email) {
      if (provider.require_email) throw new SsoRefusal("sso_not_allowed", `The identity provider did not provide an email address (claim '${provider.claim_mapping.email}')`);
      // No email and none required: a reserved-domain address unique to the identity (users.email is unique, not null).
      return `${identity.provider}-${createHash("sha256").update(identity.subject).digest("hex").slice(0, 24)}@sso.invalid`;
    }
    if (provider.require_verified_email && !identity.emailVerified) throw new SsoRefusal("sso_not_allowed", "The identity provider did not report the email address as verified");
    const domain = identity.email.slice(identity.email.lastIndexOf("@") + 1);
    const allowed = provider.allowed_email_domains.map((d) => d.trim().toLowerCase().replace(/^@/, ""));
    if (allowed.length && !allowed.includes(domain)) throw new SsoRefusal("sso_not_allowed", `The email domain '${domain}' is not allowed for this provider`);
    return identity.email;
  }
}

const accountExists = () => new SsoRefusal("sso_account_exists", "An account with this email already exists; sign in with its password, or ask an administrator to link it");

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
