import { beforeAll, describe, expect, it } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { useGatewayCluster } from "../support/gateway-cluster.js";
import type { GatewayProcess } from "../support/gateway-process.js";

// Accounts, sessions and API keys with auth on, across two gateway processes on one PostgreSQL, one Redis and a
// shared DEER_FLOW_HOME (where the session signing secret is created once, whoever starts first).
const PASSWORD = "correct-horse-battery";
// Started together: the session signing secret is created once in the shared home, whoever starts first.
const cluster = useGatewayCluster("models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n", { startTogether: true, env: { DEER_FLOW_AUTH_DISABLED: "", AUTH_JWT_SECRET: "" } });
let a: GatewayProcess;
let b: GatewayProcess;
beforeAll(() => void ([a, b] = cluster.gateways));

/** The same browser (cookies) talking to another process. */
function on(g: GatewayProcess, session: Session): Session {
  const moved = new Session(g.url);
  for (const [k, v] of session.cookies) moved.cookies.set(k, v);
  return moved;
}

describe("accounts across two processes", () => {
  it("creates exactly one first admin when /initialize reaches both processes at once", async () => {
    const results = await Promise.all(
      [a, b].map((g) => fetch(`${g.url}/api/v1/auth/initialize`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: `admin-${g.url.split(":").at(-1)}@example.com`, password: PASSWORD }) })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.find((r) => r.status !== 201)!.status).toBeGreaterThanOrEqual(400);
  });

  it("a session from A works on B; threads are owned across processes; another user's thread is 404 on both", async () => {
    const alice = await signUp(a.url, "alice@example.com", PASSWORD);
    const aliceOnB = on(b, alice);
    expect((await (await aliceOnB.fetch("/api/v1/auth/me")).json()).email).toBe("alice@example.com");
    const thread = await (await aliceOnB.fetch("/threads", { json: {} })).json();
    expect((await alice.fetch(`/threads/${thread.thread_id}`)).status).toBe(200);
    const bob = await signUp(b.url, "bob@example.com", PASSWORD);
    expect((await bob.fetch(`/threads/${thread.thread_id}`)).status).toBe(404);
    expect((await on(a, bob).fetch(`/threads/${thread.thread_id}`)).status).toBe(404);
    const run = await alice.fetch(`/threads/${thread.thread_id}/runs/wait`, { json: { input: { messages: [{ type: "human", content: "hi" }] } } });
    expect((await run.json()).messages.at(-1).content).toBe("You said: hi");
  });

  it("an API key created on A works on B, and revoking it on B stops it on A", async () => {
    const carol = await signUp(a.url, "carol@example.com", PASSWORD);
    const created = await (await carol.fetch("/api/v1/auth/api-keys", { json: { name: "ci" } })).json();
    const me = await fetch(`${b.url}/api/v1/auth/me`, { headers: { "x-api-key": created.key } });
    expect((await me.json()).email).toBe("carol@example.com");
    expect((await on(b, carol).fetch(`/api/v1/auth/api-keys/${created.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await fetch(`${a.url}/api/v1/auth/me`, { headers: { "x-api-key": created.key } })).status).toBe(401);
  });
});

describe("sessions end in every process", () => {
  const meOn = (g: GatewayProcess, token: string) => fetch(`${g.url}/api/v1/auth/me`, { headers: { cookie: `access_token=${token}` } });

  it("a token copied before logout on A stops working on A and on B at once", async () => {
    const dave = await signUp(a.url, "dave@example.com", PASSWORD);
    const copied = dave.cookies.get("access_token")!;
    // B has seen (and could have cached) the session before the logout.
    expect((await meOn(b, copied)).status).toBe(200);
    expect((await dave.fetch("/api/v1/auth/logout", { method: "POST" })).status).toBe(200);
    const [onA, onB] = await Promise.all([meOn(a, copied), meOn(b, copied)]);
    console.log(`copied token after logout: same process ${onA.status}, other process ${onB.status}`);
    expect([onA.status, onB.status]).toEqual([401, 401]);
  });

  it("a password change on A ends the old sessions on B at once", async () => {
    const erin = await signUp(a.url, "erin@example.com", PASSWORD);
    const copied = erin.cookies.get("access_token")!;
    expect((await meOn(b, copied)).status).toBe(200);
    expect((await erin.fetch("/api/v1/auth/change-password", { json: { current_password: PASSWORD, new_password: "a-new-long-secret" } })).status).toBe(200);
    const [onA, onB] = await Promise.all([meOn(a, copied), meOn(b, copied)]);
    console.log(`copied token after password change: same process ${onA.status}, other process ${onB.status}`);
    expect([onA.status, onB.status]).toEqual([401, 401]);
    // The new session works on both.
    expect((await on(b, erin).fetch("/api/v1/auth/me")).status).toBe(200);
  });

  it("the account lockout is shared: concurrent guesses spread over A and B reach the password check at most 5 times", async () => {
    await signUp(a.url, "frank@example.com", PASSWORD);
    const guesses = Array.from({ length: 40 }, (_, i) => ({ g: i % 2 ? a : b, password: i === 39 ? PASSWORD : `wrong-password-${i}` }));
    const statuses = (await Promise.all(guesses.map(({ g, password }) => new Session(g.url).login("frank@example.com", password)))).map((r) => r.status);
    const checked = statuses.filter((s) => s === 200 || s === 401).length;
    console.log(`40 concurrent guesses over two processes: ${checked} checked, ${statuses.filter((s) => s === 429).length} refused`);
    expect(checked).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - checked);
  });
});
