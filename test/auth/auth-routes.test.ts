import { readFileSync, statSync } from "node:fs";
import { request as httpRequest } from "node:http";
import path from "node:path";
import { SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { buildTestApp, startHarness, type Harness } from "../support/harness.js";
import { Session, signUp } from "../support/auth-client.js";

const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const PASSWORD = "correct-horse-battery";
let h: Harness;
afterEach(async () => h?.close());
const start = (yaml = CONFIG, options: Parameters<typeof startHarness>[1] = {}) => startHarness(yaml, { authDisabled: false, ...options }).then((x) => (h = x));

describe("the DeerFlow web app's sign-in sequence", () => {
  it("setup-status -> initialize -> login (form-encoded) -> me with the cookie", async () => {
    await start();
    const browser = new Session(h.url);
    expect(await (await browser.fetch("/api/v1/auth/setup-status")).json()).toEqual({ needs_setup: true, registration_enabled: true });

    const init = await browser.fetch("/api/v1/auth/initialize", { json: { email: "Admin@Example.com", password: PASSWORD, remember_me: true } });
    expect(init.status).toBe(201);
    const admin = await init.json();
    expect(admin).toMatchObject({ email: "admin@example.com", system_role: "admin", needs_setup: false, oauth_provider: null });
    const cookies = init.headers.getSetCookie();
    const access = cookies.find((c) => c.startsWith("access_token="))!;
    expect(access).toMatch(/HttpOnly/i);
    expect(access).toMatch(/SameSite=Lax/i);
    expect(access).toMatch(/Max-Age=604800/);
    expect(access).not.toMatch(/Secure/i);
    expect(cookies.find((c) => c.startsWith("csrf_token="))).toMatch(/SameSite=Strict/i);
    expect(cookies.find((c) => c.startsWith("csrf_token="))).not.toMatch(/HttpOnly/i);

    expect(await (await new Session(h.url).fetch("/api/v1/auth/setup-status")).json()).toEqual({ needs_setup: false, registration_enabled: true });
    const again = await new Session(h.url).fetch("/api/v1/auth/initialize", { json: { email: "other@example.com", password: PASSWORD } });
    expect(again.status).toBe(409);
    expect((await again.json()).detail).toEqual({ code: "system_already_initialized", message: "System already initialized" });

    const fresh = new Session(h.url);
    const login = await fresh.login("admin@example.com", PASSWORD);
    expect(login.status).toBe(200);
    expect(await login.json()).toEqual({ expires_in: 604800, needs_setup: false });
    // The web app's server side sends only the access_token cookie to /me.
    const me = await fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${fresh.cookies.get("access_token")}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: admin.id, email: "admin@example.com", system_role: "admin", needs_setup: false, oauth_provider: null });
    expect(await (await fresh.fetch("/api/v1/auth/providers")).json()).toEqual({ providers: [] });

    const logout = await fresh.fetch("/api/v1/auth/logout", { method: "POST" });
    expect(await logout.json()).toEqual({ message: "Successfully logged out" });
    expect(fresh.cookies.has("access_token")).toBe(false);
    expect((await fresh.fetch("/api/v1/auth/me")).status).toBe(401);
  });

  it("keeps the secret in a 0600 file under the home; a Secure cookie behind https", async () => {
    await start();
    const browser = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const file = path.join(process.env.DEER_FLOW_HOME!, ".jwt_secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8").length).toBeGreaterThanOrEqual(43);
    const res = await new Session(h.url).login("a@example.com", PASSWORD, { "x-forwarded-proto": "https" });
    expect(res.headers.getSetCookie().find((c) => c.startsWith("access_token="))).toMatch(/; Secure/i);
    expect(browser.cookies.has("access_token")).toBe(true);
  });
});

describe("remember me", () => {
  it("remember_me=false gives browser-session cookies, kept on re-issue; plain http off loopback is never persistent", async () => {
    // The public host name must be allowed (Host allowlist against DNS rebinding).
    await start(CONFIG, { allowedHosts: ["gateway.example.com"] });
    await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const browser = new Session(h.url);
    const res = await browser.fetch("/api/v1/auth/login/local", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ username: "a@example.com", password: PASSWORD, remember_me: "false" }).toString(),
    });
    expect(res.status).toBe(200);
    const access = res.headers.getSetCookie().find((c) => c.startsWith("access_token="))!;
    expect(access).not.toMatch(/Max-Age/i);
    expect(browser.cookies.get("deerflow_session_persistent")).toBe("0");
    const change = await browser.fetch("/api/v1/auth/change-password", { json: { current_password: PASSWORD, new_password: "another-long-secret" } });
    expect(change.headers.getSetCookie().find((c) => c.startsWith("access_token="))).not.toMatch(/Max-Age/i);
    expect(browser.cookies.get("deerflow_session_persistent")).toBe("0");
    // fetch cannot set Host: a raw request, as a browser reaching the server by a public name over http would.
    const { hostname, port } = new URL(h.url);
    const cookies = await new Promise<string[]>((resolve, reject) => {
      const req = httpRequest({ hostname, port, method: "POST", path: "/api/v1/auth/login/local", headers: { host: "gateway.example.com", "content-type": "application/x-www-form-urlencoded" } }, (r) => {
        r.resume();
        r.on("end", () => (r.statusCode === 200 ? resolve(r.headers["set-cookie"] ?? []) : reject(new Error(`status ${r.statusCode}`))));
      });
      req.on("error", reject);
      req.end(new URLSearchParams({ username: "a@example.com", password: "another-long-secret", remember_me: "true" }).toString());
    });
    expect(cookies.find((c) => c.startsWith("access_token="))).not.toMatch(/Max-Age/i);
    expect(cookies.find((c) => c.startsWith("deerflow_session_persistent="))).toMatch(/^deerflow_session_persistent=1;/);
  });
});

describe("credentials", () => {
  it("answers 401 {detail} without credentials, and for a tampered, expired or foreign token", async () => {
    await start();
    const browser = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
    expect((await fetch(`${h.url}/docs`)).status).toBe(200);
    const none = await fetch(`${h.url}/threads/search`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(none.status).toBe(401);
    expect((await none.json()).detail).toEqual({ code: "not_authenticated", message: "Authentication required" });
    expect((await fetch(`${h.url}/api/models`)).status).toBe(401);
    expect((await fetch(`${h.url}/no/such/route`)).status).toBe(401);

    const token = browser.cookies.get("access_token")!;
    const tampered = token.slice(0, -3) + (token.endsWith("AAA") ? "BBB" : "AAA");
    const bad = await fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${tampered}` } });
    expect(bad.status).toBe(401);
    expect((await bad.json()).detail.code).toBe("token_invalid");

    const secret = new TextEncoder().encode(readFileSync(path.join(process.env.DEER_FLOW_HOME!, ".jwt_secret"), "utf8"));
    const me = await (await browser.fetch("/api/v1/auth/me")).json();
    const expired = await new SignJWT({ ver: 0 }).setProtectedHeader({ alg: "HS256" }).setSubject(me.id).setIssuedAt(1_000).setExpirationTime(2_000).sign(secret);
    const old = await fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${expired}` } });
    expect(old.status).toBe(401);
    expect((await old.json()).detail.code).toBe("token_expired");
    const foreign = await new SignJWT({ ver: 0 }).setProtectedHeader({ alg: "HS256" }).setSubject(me.id).setExpirationTime("1h").sign(new TextEncoder().encode("another-secret-entirely"));
    expect((await fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${foreign}` } })).status).toBe(401);
    // A stale cookie does not block the public routes (the login page must still work).
    expect((await fetch(`${h.url}/api/v1/auth/setup-status`, { headers: { cookie: `access_token=${tampered}` } })).status).toBe(200);
  });

  it("answers a wrong password and an unknown email with the same 401", async () => {
    await start();
    await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const wrong = await new Session(h.url).login("a@example.com", "not-the-password");
    const unknown = await new Session(h.url).login("nobody@example.com", PASSWORD);
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const body = await wrong.json();
    expect(body).toEqual(await unknown.json());
    expect(body.detail).toEqual({ code: "invalid_credentials", message: "Incorrect email or password" });
    expect(wrong.headers.getSetCookie().some((c) => c.startsWith("access_token="))).toBe(false);
  });

  it("refuses weak and common passwords with 422 value_error, never echoing the password, and creates nothing", async () => {
    await start();
    for (const password of ["short1", "Password123", "aaaaaaaaaaaa", "alice-is-great"]) {
      const res = await new Session(h.url).fetch("/api/v1/auth/initialize", { json: { email: "alice@example.com", password } });
      expect(res.status).toBe(422);
      const text = await res.text();
      expect(text).not.toContain(password);
      const issue = JSON.parse(text).detail[0];
      expect(issue).toMatchObject({ type: "value_error", loc: ["body", "password"] });
      expect(issue.msg).toMatch(/^Value error, Password/);
    }
    const badEmail = await new Session(h.url).fetch("/api/v1/auth/initialize", { json: { email: "not-an-email", password: PASSWORD } });
    expect(badEmail.status).toBe(422);
    expect(await (await fetch(`${h.url}/api/v1/auth/setup-status`)).json()).toMatchObject({ needs_setup: true });
  });

  it("registers users (role user, 400 for a taken email) and refuses registration when config closes it", async () => {
    await start();
    await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
    const bob = await new Session(h.url).fetch("/api/v1/auth/register", { json: { email: "bob@example.com", password: PASSWORD } });
    expect(bob.status).toBe(201);
    expect(await bob.json()).toMatchObject({ email: "bob@example.com", system_role: "user" });
    const dup = await new Session(h.url).fetch("/api/v1/auth/register", { json: { email: "BOB@example.com", password: PASSWORD } });
    expect(dup.status).toBe(400);
    expect((await dup.json()).detail.code).toBe("email_already_exists");

    h.writeConfig(`${CONFIG}auth:\n  local:\n    allow_registration: false\n`);
    const closed = await new Session(h.url).fetch("/api/v1/auth/register", { json: { email: "carol@example.com", password: PASSWORD } });
    expect(closed.status).toBe(403);
    expect((await closed.json()).detail.code).toBe("registration_disabled");
    expect(await (await fetch(`${h.url}/api/v1/auth/setup-status`)).json()).toEqual({ needs_setup: false, registration_enabled: false });
  });
});

describe("CSRF", () => {
  it("requires the double-submit token on cookie-authenticated state-changing requests (403), not on GETs", async () => {
    await start();
    const browser = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const without = await browser.fetch("/threads", { json: {}, csrf: false });
    expect(without.status).toBe(403);
    expect((await without.json()).detail).toBe("CSRF token missing. Include X-CSRF-Token header.");
    const mismatch = await browser.fetch("/threads", { json: {}, csrf: false, headers: { "x-csrf-token": "nope" } });
    expect(mismatch.status).toBe(403);
    expect((await mismatch.json()).detail).toBe("CSRF token mismatch.");
    expect((await browser.fetch("/threads", { json: {} })).status).toBe(200);
    expect((await browser.fetch("/threads/search", { json: {} })).status).toBe(200);
    expect((await browser.fetch("/api/v1/auth/me")).status).toBe(200);
  });

  it("refuses a login from a foreign Origin (login CSRF) and accepts the same origin and localhost", async () => {
    await start();
    await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const evil = await new Session(h.url).login("a@example.com", PASSWORD, { origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    expect((await evil.json()).detail).toBe("Cross-site auth request denied.");
    expect((await new Session(h.url).login("a@example.com", PASSWORD, { origin: h.url })).status).toBe(200);
    expect((await new Session(h.url).login("a@example.com", PASSWORD, { origin: "http://localhost:3000" })).status).toBe(200);
  });
});

describe("change-password", () => {
  it("re-issues the session; old sessions stop working at once; the old password no longer signs in", async () => {
    await start();
    const first = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const second = new Session(h.url);
    expect((await second.login("a@example.com", PASSWORD)).status).toBe(200);

    const wrong = await first.fetch("/api/v1/auth/change-password", { json: { current_password: "nope-nope-nope", new_password: "a-new-long-secret" } });
    expect(wrong.status).toBe(400);
    expect((await wrong.json()).detail).toEqual({ code: "invalid_credentials", message: "Current password is incorrect" });
    const weak = await first.fetch("/api/v1/auth/change-password", { json: { current_password: PASSWORD, new_password: "password123" } });
    expect(weak.status).toBe(422);

    const oldToken = first.cookies.get("access_token");
    const ok = await first.fetch("/api/v1/auth/change-password", { json: { current_password: PASSWORD, new_password: "a-new-long-secret" } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ message: "Password changed successfully" });
    expect(first.cookies.get("access_token")).not.toBe(oldToken);
    expect((await first.fetch("/api/v1/auth/me")).status).toBe(200);
    const stale = await second.fetch("/api/v1/auth/me");
    expect(stale.status).toBe(401);
    expect((await stale.json()).detail.code).toBe("token_invalid");
    expect((await fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${oldToken}` } })).status).toBe(401);
    expect((await new Session(h.url).login("a@example.com", PASSWORD)).status).toBe(401);
    expect((await new Session(h.url).login("a@example.com", "a-new-long-secret")).status).toBe(200);
  });
});

describe("login lockout", () => {
  it("locks an account after 5 failures with 429 + Retry-After, even for the right password and from another address", async () => {
    await start(CONFIG, { trustedProxies: ["127.0.0.1"] });
    await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const from = (ip: string) => ({ "x-forwarded-for": ip });
    for (let i = 0; i < 5; i++) expect((await new Session(h.url).login("a@example.com", "wrong-password", from("203.0.113.7"))).status).toBe(401);
    const locked = await new Session(h.url).login("a@example.com", PASSWORD, from("203.0.113.7"));
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(locked.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect((await locked.json()).detail).toBe("Too many login attempts. Try again later.");
    expect((await new Session(h.url).login("a@example.com", PASSWORD, from("203.0.113.8"))).status).toBe(429);
  });

  it("ignores X-Forwarded-For from an untrusted peer: rotating it does not dodge the address limit", async () => {
    const saved = process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS;
    process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS = "5";
    try {
      await start();
    } finally {
      if (saved === undefined) delete process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS;
      else process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS = saved;
    }
    await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    for (let i = 0; i < 5; i++) await new Session(h.url).login(`u${i}@example.com`, "wrong-password", { "x-forwarded-for": `198.51.100.${i}` });
    expect((await new Session(h.url).login("a@example.com", PASSWORD, { "x-forwarded-for": "198.51.100.99" })).status).toBe(429);
  });
});

describe("the switch", () => {
  it("DEER_FLOW_AUTH_DISABLED runs requests as the default user; /me shows it; password changes are refused", async () => {
    h = await startHarness(CONFIG);
    const me = await fetch(`${h.url}/api/v1/auth/me`);
    expect(await me.json()).toEqual({ id: "default", email: "default@test.local", system_role: "admin", needs_setup: false, oauth_provider: null });
    expect((await fetch(`${h.url}/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(200);
    const change = await fetch(`${h.url}/api/v1/auth/change-password`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ current_password: "x", new_password: PASSWORD }) });
    expect(change.status).toBe(400);
  });

  it("refuses DEER_FLOW_AUTH_DISABLED=1 when DEER_FLOW_ENV=production, from the option and from the environment", async () => {
    h = await startHarness(CONFIG);
    const saved = { env: process.env.DEER_FLOW_ENV, flag: process.env.DEER_FLOW_AUTH_DISABLED };
    process.env.DEER_FLOW_ENV = "production";
    try {
      await expect(buildTestApp({ authDisabled: true })).rejects.toThrow(/DEER_FLOW_AUTH_DISABLED=1 is refused when DEER_FLOW_ENV=production/);
      process.env.DEER_FLOW_AUTH_DISABLED = "1";
      await expect(buildTestApp({ authDisabled: undefined })).rejects.toThrow(/refused/);
      delete process.env.DEER_FLOW_AUTH_DISABLED;
      const app = await buildTestApp({ authDisabled: undefined });
      const res = await app.inject({ method: "GET", url: "/api/models" });
      expect(res.statusCode).toBe(401);
      await app.close();
    } finally {
      for (const [k, v] of [["DEER_FLOW_ENV", saved.env], ["DEER_FLOW_AUTH_DISABLED", saved.flag]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
