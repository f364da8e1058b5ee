import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { Session, signUp } from "../support/auth-client.js";

// Sessions end on the server (one process, SQLite): a copy of the cookie stops working at logout.
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
const PASSWORD = "correct-horse-battery";
let h: Harness;
afterEach(async () => h?.close());

const meWith = (token: string) => fetch(`${h.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${token}` } });

describe("server-side sessions", () => {
  it("a token copied before logout stops working; the account's other sessions keep working", async () => {
    h = await startHarness(CONFIG, { authDisabled: false });
    const browser = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const laptop = new Session(h.url);
    expect((await laptop.login("a@example.com", PASSWORD)).status).toBe(200);
    const copied = browser.cookies.get("access_token")!;
    expect((await meWith(copied)).status).toBe(200);

    expect((await browser.fetch("/api/v1/auth/logout", { method: "POST" })).status).toBe(200);
    const after = await meWith(copied);
    console.log(`copied token after logout (same process): ${after.status}`);
    expect(after.status).toBe(401);
    expect((await after.json()).detail).toEqual({ code: "token_invalid", message: "Token error: invalid" });
    expect((await laptop.fetch("/api/v1/auth/me")).status).toBe(200);
    // Logging out twice, or with a cookie that is not ours, is still a plain logout.
    expect((await fetch(`${h.url}/api/v1/auth/logout`, { method: "POST", headers: { cookie: `access_token=${copied}` } })).status).toBe(200);
    expect((await fetch(`${h.url}/api/v1/auth/logout`, { method: "POST", headers: { cookie: "access_token=not-a-token" } })).status).toBe(200);
  });

  it("a password change ends every session of the account but the one that made it", async () => {
    h = await startHarness(CONFIG, { authDisabled: false });
    const browser = await signUp(h.url, "a@example.com", PASSWORD, "initialize");
    const laptop = new Session(h.url);
    expect((await laptop.login("a@example.com", PASSWORD)).status).toBe(200);
    const copied = browser.cookies.get("access_token")!;
    expect((await browser.fetch("/api/v1/auth/change-password", { json: { current_password: PASSWORD, new_password: "a-new-long-secret" } })).status).toBe(200);
    expect((await meWith(copied)).status).toBe(401);
    expect((await laptop.fetch("/api/v1/auth/me")).status).toBe(401);
    expect((await browser.fetch("/api/v1/auth/me")).status).toBe(200);
  });
});
