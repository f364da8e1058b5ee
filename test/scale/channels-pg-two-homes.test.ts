// Issue 48 item 3: the channel stores in PostgreSQL. Two real gateway processes on one PostgreSQL and one Redis,
// auth on, each with its OWN DEER_FLOW_HOME (as on two hosts: nothing may pass through a local file; they share
// the session signing secret by environment). A connect code made through process A's API binds on a Telegram
// webhook delivered to process B; the bound user's messages run on their thread whichever process takes them; the
// same event delivered to both processes runs once (dedupe_storage.backend: postgres, so the ids are in PostgreSQL).
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Session, signUp } from "../support/auth-client.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { freePort, PROCESS_HOOK_MS, startGateway, type GatewayProcess } from "../support/gateway-process.js";
import { createTestDatabase, sharedSections, testPrefix } from "../support/services.js";
import { until } from "../support/wait.js";

const SECRET = "pg-channels-secret";
const PASSWORD = "correct-horse-battery";
const jwtSecret = randomUUID() + randomUUID();
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let tg: TelegramFake;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "dfgw-scale-chpg-"));
  tg = await startTelegramFake("3:PGCHAN");
  const config = path.join(dir, "config.yaml");
  writeFileSync(config, `models:
  - name: s
    use: deerflow-gateway:ScriptedChatModel
    model: s
channels:
  telegram:
    enabled: true
    bot_token: "${tg.token}"
    api_base: ${tg.url}
    mode: webhook
    webhook_secret: ${SECRET}
    stream_edit_interval_ms: 30
channel_connections:
  enabled: true
  telegram:
    enabled: true
    bot_username: pg_test_bot
dedupe_storage:
  backend: postgres
${sharedSections(db.url, testPrefix())}`);
  const env = (name: string) => ({
    DEER_FLOW_CONFIG_PATH: config, DEER_FLOW_HOME: path.join(dir, name), DEER_FLOW_AGENTS_DIR: path.join(dir, `agents-${name}`),
    DEER_FLOW_AUTH_DISABLED: "", AUTH_JWT_SECRET: jwtSecret,
  });
  // One after the other: two cold starts at once outrun the start bound on a loaded machine.
  a = await startGateway(await freePort(), env("home-a"));
  b = await startGateway(await freePort(), env("home-b"));
}, PROCESS_HOOK_MS * 2);
afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")]);
  await tg?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The same browser (cookies) talking to another process. */
function on(g: GatewayProcess, session: Session): Session {
  const moved = new Session(g.url);
  for (const [k, v] of session.cookies) moved.cookies.set(k, v);
  return moved;
}

const deliver = (g: GatewayProcess, update: Record<string, unknown>) => fetch(`${g.url}/api/channels/webhooks/telegram`, {
  method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update),
});
const lastText = (chatId: number) => tg.sent.filter((s) => s.chat_id === String(chatId)).at(-1)?.texts.at(-1);

describe("channel stores in PostgreSQL, two processes with separate homes", () => {
  it("a connect code made on A binds on a webhook delivered to B; the user's messages run on their thread on either process", async () => {
    const alice = await signUp(a.url, `alice-${randomUUID().slice(0, 8)}@example.com`, PASSWORD);
    const made = await alice.fetch("/api/channels/telegram/connect", { method: "POST" });
    expect(made.status).toBe(200);
    const { code } = await made.json();
    expect((await deliver(b, tg.dm(711, `/start ${code}`))).status).toBe(200);
    await until(() => lastText(711) !== undefined, 15_000);
    expect(lastText(711)).toBe("Telegram connected to DeerFlow.");
    // Both processes list the connection (it is in the shared database, not in either home).
    for (const g of [a, b]) {
      const { connections } = await (await on(g, alice).fetch("/api/channels/connections")).json();
      expect(connections).toEqual([expect.objectContaining({ provider: "telegram", status: "connected", external_account_id: "711" })]);
    }
    expect((await deliver(a, tg.dm(711, "first via A"))).status).toBe(200);
    await until(() => lastText(711) === "You said: first via A", 30_000);
    // The answer is on screen before its run has ended; a message in that window gets "already processing".
    await until(async () => {
      const found = await (await on(a, alice).fetch("/threads/search", { json: {} })).json();
      if (found.length !== 1) return false;
      const runs = await (await on(a, alice).fetch(`/threads/${found[0].thread_id}/runs`)).json();
      return runs.length === 1 && runs[0].status === "success";
    }, 30_000);
    expect((await deliver(b, tg.dm(711, "second via B"))).status).toBe(200);
    await until(() => lastText(711) === "You said: second via B", 30_000);
    // One conversation, one thread, Alice's: both processes found the same conversation -> thread mapping.
    const threads = await (await on(b, alice).fetch("/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "telegram", chat_id: "711" });
    const runs = await (await alice.fetch(`/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs).toHaveLength(2);
    for (const home of ["home-a", "home-b"]) expect(existsSync(path.join(dir, home, "data", "channels.sqlite"))).toBe(false);
  });

  it("the same event delivered 5 times across both processes runs once (its id recorded in PostgreSQL)", async () => {
    const bob = await signUp(b.url, `bob-${randomUUID().slice(0, 8)}@example.com`, PASSWORD);
    const { code } = await (await bob.fetch("/api/channels/telegram/connect", { method: "POST" })).json();
    expect((await deliver(a, tg.dm(712, `/start ${code}`))).status).toBe(200);
    await until(() => lastText(712) === "Telegram connected to DeerFlow.", 15_000);
    const update = tg.dm(712, "once across homes");
    const statuses = await Promise.all(Array.from({ length: 5 }, (_, i) => deliver(i % 2 ? b : a, update)));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await until(() => lastText(712) === "You said: once across homes", 15_000);
    const threads = await (await bob.fetch("/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    await until(async () => (await (await bob.fetch(`/threads/${threads[0].thread_id}/runs`)).json()).every((r: { status: string }) => r.status === "success"), 15_000);
    expect(await (await on(a, bob).fetch(`/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
    expect(tg.sent.filter((s) => s.chat_id === "712" && s.texts[0] !== "Telegram connected to DeerFlow.")).toHaveLength(1);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT key FROM channel_dedupe WHERE key = $1", [`telegram::${update.update_id}`]);
      expect(rows).toHaveLength(1);
    } finally {
      await client.end();
    }
  });
});
