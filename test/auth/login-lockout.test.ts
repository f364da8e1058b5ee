import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { Session, signUp } from "../support/auth-client.js";

// The login lockout through the routes (one process, SQLite): counted before the password check, per account and
// per address.
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const PASSWORD = "correct-horse-battery";
let h: Harness;
const savedEnv = process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS;
afterEach(async () => {
  await h?.close();
  if (savedEnv === undefined) delete process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS;
  else process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS = savedEnv;
});
const start = (options: Parameters<typeof startHarness>[1] = {}) => startHarness(CONFIG, { authDisabled: false, ...options }).then((x) => (h = x));

describe("login lockout", () => {
  it("60 concurrent guesses from one address (one right): at most 5 reach the password check, the rest are 429", async () => {
    await start();
    await signUp(h.url, "victim@example.com", PASSWORD, "initialize");
    // The right guess goes last, as an attacker's would land anywhere in the batch.
    const guesses = [...Array.from({ length: 59 }, (_, i) => `wrong-password-${i}`), PASSWORD];
    const results = await Promise.all(guesses.map((p) => new Session(h.url).login("victim@example.com", p)));
    const statuses = results.map((r) => r.status);
    const checked = statuses.filter((s) => s === 200 || s === 401).length;
    console.log(`60 concurrent guesses: ${statuses.filter((s) => s === 200).length} signed in, ${checked} checked, ${statuses.filter((s) => s === 429).length} refused`);
    expect(checked).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(60 - checked);
    expect(statuses.every((s) => s === 200 || s === 401 || s === 429)).toBe(true);
  });

  it("one account's failures lock that account only: another account behind the same address still signs in", async () => {
    await start();
    await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
    await signUp(h.url, "colleague@example.com", PASSWORD);
    for (let i = 0; i < 5; i++) expect((await new Session(h.url).login("admin@example.com", "wrong-password")).status).toBe(401);
    const locked = await new Session(h.url).login("admin@example.com", PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await locked.json()).toEqual({ detail: "Too many login attempts. Try again later." });
    // Same address (every request here comes from 127.0.0.1), another account: not locked.
    const other = await new Session(h.url).login("colleague@example.com", PASSWORD);
    console.log(`after 5 failures on one account, another account behind the same address: ${other.status}`);
    expect(other.status).toBe(200);
    // Case and spaces do not make a fresh counter for the locked account.
    expect((await new Session(h.url).login("  ADMIN@example.com ", PASSWORD)).status).toBe(429);
  });

  it("the address limit (AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS) stops spraying many accounts from one address", async () => {
    process.env.AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS = "8";
    await start();
    await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
    // One guess per account: no account reaches its own limit, the address does.
    for (let i = 0; i < 8; i++) expect((await new Session(h.url).login(`user${i}@example.com`, "wrong-password")).status).toBe(401);
    const sprayed = await new Session(h.url).login("admin@example.com", PASSWORD);
    expect(sprayed.status).toBe(429);
    expect(Number(sprayed.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("a right password clears its account's counter", async () => {
    await start();
    await signUp(h.url, "admin@example.com", PASSWORD, "initialize");
    for (let i = 0; i < 4; i++) expect((await new Session(h.url).login("admin@example.com", "wrong-password")).status).toBe(401);
    expect((await new Session(h.url).login("admin@example.com", PASSWORD)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await new Session(h.url).login("admin@example.com", "wrong-password")).status).toBe(401);
    expect((await new Session(h.url).login("admin@example.com", PASSWORD)).status).toBe(200);
  });
});
