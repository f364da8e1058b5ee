// SSO over OpenID Connect against a real OIDC provider in the test process (oidc-provider): the web app's
// redirect dance driven with fetch and two cookie jars (the browser's cookies for the gateway and for the IdP).
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { Session, signUp } from "../support/auth-client.js";
import { startFakeIdp, type FakeIdp } from "../support/fakes/oidc-idp.js";
import { createTestDatabase } from "../support/services.js";

const MODELS = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const SECRET = "idp-client-secret-value";
process.env.TEST_SSO_CLIENT_SECRET = SECRET;

let h: Harness | undefined;
let idp: FakeIdp | undefined;
afterEach(async () => {
  await h?.close();
  await idp?.close();
  h = idp = undefined;
});

const providerYaml = (issuer: string, extra = "") =>
  `      corp:\n        display_name: Corp SSO\n        issuer: ${issuer}\n        client_id: gateway\n        client_secret: $TEST_SSO_CLIENT_SECRET\n` +
  `        allowed_email_domains: [example.com]\n        admin_emails: [boss@example.com]\n${extra}`;

/** An IdP and a gateway (auth on) configured with it as provider `corp`; `extra` is appended to the config. */
async function setUp(providerExtra = "", extraProviders = "", sections = ""): Promise<{ h: Harness; idp: FakeIdp }> {
  idp = await startFakeIdp();
  h = await startHarness(`${MODELS}${sections}auth:\n  oidc:\n    enabled: true\n    providers:\n${providerYaml(idp.issuer, providerExtra)}${extraProviders}`, { authDisabled: false });
  idp.registerClient({ clientId: "gateway", clientSecret: SECRET, redirectUris: [`${h.url}/api/v1/auth/callback/corp`] });
  return { h, idp };
}

/** A port nothing listens on (an IdP that is down). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * The browser's part of a sign-in: the login page's SSO button (`/oauth/corp`), then the IdP's redirects until
 * one points back at the gateway. @returns the callback path (with its query) the IdP sent the browser to.
 */
async function toCallback(gw: Session, idpJar: Session, next = "/workspace/chats"): Promise<string> {
  const start = await gw.fetch(`/api/v1/auth/oauth/corp?next=${encodeURIComponent(next)}&remember_me=true`, { redirect: "manual" });
  expect(start.status).toBe(302);
  let location = new URL(start.headers.get("location")!);
  for (let hops = 0; location.origin === idpJar.baseUrl; hops++) {
    expect(hops).toBeLessThan(10);
    const res = await idpJar.fetch(location.pathname + location.search, { redirect: "manual" });
    expect([302, 303]).toContain(res.status);
    location = new URL(res.headers.get("location")!, idpJar.baseUrl);
  }
  expect(location.origin).toBe(gw.baseUrl);
  return location.pathname + location.search;
}

/** The whole dance: the callback's response. */
async function signIn(gw: Session): Promise<Response> {
  return gw.fetch(await toCallback(gw, new Session(idp!.issuer)), { redirect: "manual" });
}

/** Asserts a refused callback: back to the login page with `code` and a message matching `message`, no session. */
async function expectRefused(res: Response, gw: Session, code: string, message: RegExp): Promise<void> {
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get("location")!, "http://x");
  expect(location.pathname).toBe("/login");
  expect(location.searchParams.get("error")).toBe(code);
  expect(location.searchParams.get("message")).toMatch(message);
  expect(res.headers.getSetCookie().some((c) => c.startsWith("access_token="))).toBe(false);
  expect((await gw.fetch("/api/v1/auth/me")).status).toBe(401);
}

/** Whether any account or identity link exists for `email` / the IdP's current login. */
async function accountFor(email: string) {
  return h!.app.deerflow.persistence.users.getByEmail(email);
}

describe("SSO: provider list", () => {
  it("lists the configured providers with availability; a dead IdP is unavailable and local sign-in still works", async () => {
    const port = await deadPort();
    await setUp("", `      down:\n        display_name: Old IdP\n        issuer: http://127.0.0.1:${port}/realms/x\n        client_id: g\n        client_secret: s\n`);
    const res = await new Session(h!.url).fetch("/api/v1/auth/providers");
    expect(await res.json()).toEqual({
      providers: [
        { id: "corp", display_name: "Corp SSO", type: "oidc", available: true },
        { id: "down", display_name: "Old IdP", type: "oidc", available: false },
      ],
    });
    expect(JSON.stringify(await (await new Session(h!.url).fetch("/api/v1/auth/providers")).json())).not.toContain(SECRET);
    // The dead IdP's button goes back to the login page with a reason; password accounts are unaffected.
    const button = await new Session(h!.url).fetch("/api/v1/auth/oauth/down", { redirect: "manual" });
    expect(new URL(button.headers.get("location")!, "http://x").searchParams.get("message")).toMatch(/discovery document .* could not be read/);
    await signUp(h!.url, "admin@example.com", "correct-horse-battery", "initialize");
    expect((await new Session(h!.url).login("admin@example.com", "correct-horse-battery")).status).toBe(200);
  });

  it("lists nothing while auth.oidc.enabled is false, and the SSO routes answer 404", async () => {
    h = await startHarness(`${MODELS}auth:\n  oidc:\n    enabled: false\n`, { authDisabled: false });
    const browser = new Session(h.url);
    expect(await (await browser.fetch("/api/v1/auth/providers")).json()).toEqual({ providers: [] });
    expect((await browser.fetch("/api/v1/auth/oauth/corp", { redirect: "manual" })).status).toBe(404);
  });
});

describe("SSO: sign-in", () => {
  it("authorization code + PKCE + state + nonce, then the same session cookies as a local sign-in; the account is created, then reused", async () => {
    await setUp();
    const gw = new Session(h!.url);
    const start = await gw.fetch("/api/v1/auth/oauth/corp?next=/workspace/chats", { redirect: "manual" });
    const auth = new URL(start.headers.get("location")!);
    expect(auth.origin).toBe(idp!.issuer);
    expect(Object.fromEntries(auth.searchParams)).toMatchObject({ response_type: "code", client_id: "gateway", code_challenge_method: "S256", scope: "openid email profile" });
    for (const p of ["state", "nonce", "code_challenge"]) expect(auth.searchParams.get(p)).toMatch(/^[\w-]{20,}$/);
    expect(auth.searchParams.get("redirect_uri")).toBe(`${h!.url}/api/v1/auth/callback/corp`);
    const stateCookie = start.headers.getSetCookie().find((c) => c.startsWith("df_oidc_state_corp="))!;
    expect(stateCookie).toMatch(/HttpOnly/i);
    expect(stateCookie).toMatch(/SameSite=Lax/i);
    expect(stateCookie).toMatch(/Path=\/api\/v1\/auth\/callback\/corp/);
    expect(stateCookie).toMatch(/Max-Age=300/);
    expect(stateCookie).not.toContain(auth.searchParams.get("state")!);

    const res = await signIn(gw);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/auth/callback?next=%2Fworkspace%2Fchats");
    const cookies = res.headers.getSetCookie();
    expect(cookies.find((c) => c.startsWith("access_token="))).toMatch(/HttpOnly.*SameSite=Lax|SameSite=Lax.*HttpOnly/i);
    expect(cookies.find((c) => c.startsWith("csrf_token="))).toMatch(/SameSite=Strict/i);
    expect(gw.cookies.has("df_oidc_state_corp")).toBe(false);
    const me = await (await gw.fetch("/api/v1/auth/me")).json();
    expect(me).toMatchObject({ email: "alice@example.com", system_role: "user", oauth_provider: "corp", needs_setup: false });
    // The session works like a local one: a CSRF-checked write succeeds.
    expect((await gw.fetch("/api/v1/auth/api-keys", { json: { name: "laptop" } })).status).toBe(201);

    const again = new Session(h!.url);
    expect((await signIn(again)).status).toBe(302);
    expect((await (await again.fetch("/api/v1/auth/me")).json()).id).toBe(me.id);
  });

  it("maps admin_emails to the admin role and honours claim_mapping", async () => {
    await setUp("        claim_mapping:\n          email: upn\n");
    // Azure AD style: the address is in `upn`; `email` holds something else.
    idp!.nextLogin = { sub: "boss-sub", upn: "Boss@Example.com", email: "other@example.com", email_verified: true };
    const boss = new Session(h!.url);
    expect((await signIn(boss)).status).toBe(302);
    expect(await (await boss.fetch("/api/v1/auth/me")).json()).toMatchObject({ email: "boss@example.com", system_role: "admin" });
    expect(await accountFor("other@example.com")).toBeNull();
  });
});

describe("SSO: where the browser lands", () => {
  it("drops a `next` that leaves the site, and remember_me=false gives a browser-session cookie", async () => {
    await setUp();
    const gw = new Session(h!.url);
    const start = await gw.fetch(`/api/v1/auth/oauth/corp?next=${encodeURIComponent("//evil.example/x")}&remember_me=false`, { redirect: "manual" });
    let location = new URL(start.headers.get("location")!);
    const jar = new Session(idp!.issuer);
    while (location.origin === idp!.issuer) location = new URL((await jar.fetch(location.pathname + location.search, { redirect: "manual" })).headers.get("location")!, idp!.issuer);
    const res = await gw.fetch(location.pathname + location.search, { redirect: "manual" });
    expect(res.headers.get("location")).toBe("/auth/callback?next=%2Fworkspace");
    const access = res.headers.getSetCookie().find((c) => c.startsWith("access_token="))!;
    expect(access).not.toMatch(/Max-Age/i);
    expect((await gw.fetch("/api/v1/auth/me")).status).toBe(200);
  });
});

describe("SSO: on PostgreSQL", () => {
  it("creates the account and its link in the shared database, reuses them, and refuses a taken email", async () => {
    const db = await createTestDatabase();
    try {
      await setUp("", "", `database:\n  backend: postgres\n  url: ${db.url}\n`);
      const first = new Session(h!.url);
      expect((await signIn(first)).status).toBe(302);
      const me = await (await first.fetch("/api/v1/auth/me")).json();
      expect(me).toMatchObject({ email: "alice@example.com", oauth_provider: "corp", system_role: "user" });
      const again = new Session(h!.url);
      expect((await signIn(again)).status).toBe(302);
      expect((await (await again.fetch("/api/v1/auth/me")).json()).id).toBe(me.id);
      await signUp(h!.url, "dave@example.com", "correct-horse-battery", "initialize");
      idp!.nextLogin = { sub: "dave-sub", email: "dave@example.com", email_verified: true };
      const dave = new Session(h!.url);
      await expectRefused(await signIn(dave), dave, "sso_account_exists", /already exists/);
      expect(await h!.app.deerflow.persistence.oidcIdentities.findUser("corp", "dave-sub")).toBeNull();
    } finally {
      await h?.close();
      h = undefined;
      await db.drop();
    }
  });
});

describe("SSO: refusals create nothing", () => {
  it("a callback whose state does not match the browser's", async () => {
    await setUp();
    const gw = new Session(h!.url);
    const callback = new URL(await toCallback(gw, new Session(idp!.issuer)), h!.url);
    callback.searchParams.set("state", "forged-state-value");
    await expectRefused(await gw.fetch(callback.pathname + callback.search, { redirect: "manual" }), gw, "sso_failed", /state mismatch/);
    expect(await accountFor("alice@example.com")).toBeNull();
  });

  it("a callback in another browser (no state cookie)", async () => {
    await setUp();
    const callback = await toCallback(new Session(h!.url), new Session(idp!.issuer));
    const other = new Session(h!.url);
    await expectRefused(await other.fetch(callback, { redirect: "manual" }), other, "sso_failed", /not started in this browser/);
    expect(await accountFor("alice@example.com")).toBeNull();
  });

  it("a replayed code (same URL, same state cookie)", async () => {
    await setUp();
    const gw = new Session(h!.url);
    const callback = await toCallback(gw, new Session(idp!.issuer));
    const stateCookie = gw.cookies.get("df_oidc_state_corp")!;
    expect((await gw.fetch(callback, { redirect: "manual" })).status).toBe(302);
    const attacker = new Session(h!.url);
    attacker.cookies.set("df_oidc_state_corp", stateCookie);
    await expectRefused(await attacker.fetch(callback, { redirect: "manual" }), attacker, "sso_failed", /refused the authorization code \(invalid_grant\)/);
  });

  const tampered: [string, () => FakeIdp["tamper"], RegExp][] = [
    ["an ID token signed by another key (same kid)", () => ({ foreignKey: true }), /signature does not verify/],
    ["an expired ID token", () => ({ claims: { exp: Math.floor(Date.now() / 1000) - 600, iat: Math.floor(Date.now() / 1000) - 1200 } }), /has expired/],
    ["an ID token for another audience", () => ({ claims: { aud: "someone-else" } }), /another client \(audience mismatch\)/],
    ["an ID token from another issuer", () => ({ claims: { iss: "https://evil.example" } }), /another issuer/],
    ["an ID token with another nonce", () => ({ claims: { nonce: "not-this-sign-in" } }), /nonce does not match/],
  ];
  for (const [name, tamper, message] of tampered) {
    it(name, async () => {
      await setUp();
      idp!.tamper = tamper();
      const gw = new Session(h!.url);
      await expectRefused(await signIn(gw), gw, "sso_failed", message);
      expect(await accountFor("alice@example.com")).toBeNull();
    });
  }

  const policy: [string, FakeIdp["nextLogin"], string, RegExp][] = [
    ["no email when one is required", { sub: "no-mail", name: "No Mail" }, "sso_not_allowed", /did not provide an email address/],
    ["an unverified email", { sub: "unverified", email: "carol@example.com", email_verified: false }, "sso_not_allowed", /not .*verified/],
    ["a domain not allowed", { sub: "mallory", email: "mallory@evil.test", email_verified: true }, "sso_not_allowed", /domain 'evil.test' is not allowed/],
  ];
  for (const [name, account, code, message] of policy) {
    it(name, async () => {
      await setUp();
      idp!.nextLogin = account;
      const gw = new Session(h!.url);
      await expectRefused(await signIn(gw), gw, code, message);
      if (typeof account.email === "string") expect(await accountFor(account.email)).toBeNull();
      expect(await h!.app.deerflow.persistence.oidcIdentities.findUser("corp", account.sub)).toBeNull();
    });
  }

  it("an email that a local password account owns is not taken over", async () => {
    await setUp();
    const local = await signUp(h!.url, "alice@example.com", "correct-horse-battery", "initialize");
    const gw = new Session(h!.url);
    await expectRefused(await signIn(gw), gw, "sso_account_exists", /already exists/);
    expect(await h!.app.deerflow.persistence.oidcIdentities.findUser("corp", "alice-sub")).toBeNull();
    expect((await (await local.fetch("/api/v1/auth/me")).json()).oauth_provider).toBeNull();
  });

  it("auto_create_users: false refuses a new identity", async () => {
    await setUp("        auto_create_users: false\n");
    const gw = new Session(h!.url);
    await expectRefused(await signIn(gw), gw, "sso_not_allowed", /creation is disabled/);
    expect(await accountFor("alice@example.com")).toBeNull();
  });
});

describe("SSO: config", () => {
  const bad: [string, string, RegExp][] = [
    ["a misspelt key", "        alowed_email_domains: [example.com]\n", /auth\.oidc\.providers\.corp.*alowed_email_domains/],
    ["an issuer that is not a URL", "", /auth\.oidc\.providers\.corp\.issuer: issuer must be an http\(s\) URL/],
    ["scopes without openid", "        scopes: [email]\n", /auth\.oidc\.providers\.corp\.scopes: scopes must include openid/],
  ];
  for (const [name, extra, message] of bad) {
    it(`refuses to start with ${name}, naming the key`, async () => {
      const issuer = name.includes("issuer") ? "keycloak.example.com/realms/x" : "https://idp.example.com";
      await expect(startHarness(`${MODELS}auth:\n  oidc:\n    enabled: true\n    providers:\n${providerYaml(issuer, extra)}`, { authDisabled: false })).rejects.toThrow(message);
    });
  }
});
