// Feishu / Lark over the long connection (upstream's default mode), end to end: an unchanged upstream feishu config
// (app_id, app_secret, domain; no mode) makes the gateway ask the fake's `callback/ws/endpoint` for a socket through
// lark-oapi's WSClient, events arrive as pbbp2 data frames and are acked, answers stream back as card replies and
// PATCHes. Binding, commands, dedupe, group rules, REST retries, a refused app, and the lease across processes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { FeishuSection } from "../../src/channels/config.js";
import { FeishuAdapter } from "../../src/channels/feishu.js";
import { SqliteChannelStore } from "../../src/channels/store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { attachLongConnection, type FeishuLongConnectionFake } from "../support/fakes/feishu-ws.js";
import { until } from "../support/wait.js";

const APP_ID = "cli_a1b2c3d4e5f60718";
const APP_SECRET = "feishu-app-secret";

let h: Harness | undefined;
let fs: FeishuFake | undefined;
let lc: FeishuLongConnectionFake | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await h?.close();
  for (const c of cleanups.splice(0)) await c();
  await lc?.close();
  await fs?.close();
  h = fs = lc = undefined;
});

/** The feishu section exactly as upstream's config.example.yaml has it (plus the fake's domain), and our edit interval. */
function config(fake: FeishuFake, extra: string[] = [], tokenDelayMs = 15): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", `    token_delay_ms: ${tokenDelayMs}`,
    "channels:", "  feishu:", "    enabled: true", `    app_id: ${fake.appId}`, `    app_secret: ${fake.appSecret}`, `    domain: ${fake.url}`,
    "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  feishu:", "    enabled: true", "",
  ].join("\n");
}

async function setup(options: { extra?: string[]; tokenDelayMs?: number; logs?: string[] } = {}): Promise<{ h: Harness; fs: FeishuFake; lc: FeishuLongConnectionFake; alice: Session }> {
  fs = await startFeishuFake(APP_ID, APP_SECRET);
  lc = await attachLongConnection(fs);
  const logs = options.logs;
  const logger = logs ? pino({ level: "info" }, { write: (line: string) => void logs.push(line) }) : undefined;
  h = await startHarness(config(fs, options.extra, options.tokenDelayMs), { authDisabled: false, ...(logger ? { logger } : {}) });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const fake = lc;
  await until(() => fake.connections() === 1, 15_000);
  return { h, fs, lc, alice };
}

const repliesTo = (fake: FeishuFake, messageId: string) => fake.sent.filter((s) => s.reply_to === messageId);
const lastText = (fake: FeishuFake, messageId: string) => repliesTo(fake, messageId).at(-1)?.texts.at(-1);

async function connect(fake: FeishuFake, conn: FeishuLongConnectionFake, session: Session, openId: string): Promise<void> {
  const body = await (await session.fetch("/api/channels/feishu/connect", { method: "POST" })).json();
  expect(body).toMatchObject({ provider: "feishu", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow Feishu bot.` });
  conn.push(feishuText(`ev-connect-${openId}`, openId, `/connect ${body.code}`));
  await until(() => lastText(fake, `om_in_ev-connect-${openId}`) === "Feishu connected to DeerFlow.");
}

describe("Feishu long connection (websocket mode)", () => {
  it("holds the socket with an unchanged upstream config; binds by /connect; streams a DM by card patches; runs an event delivered five times once, acking each", async () => {
    const { h, fs, lc, alice } = await setup();
    expect(lc.endpointCalls).toEqual([APP_ID]);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "feishu")).toMatchObject({ connectable: true, connection_status: "not_connected" });

    // An unbound identity gets upstream's answer and starts nothing.
    lc.push(feishuText("ev-stranger", "ou_stranger", "hello"));
    await until(() => lastText(fs, "om_in_ev-stranger") !== undefined);
    expect(lastText(fs, "om_in_ev-stranger")).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);

    await connect(fs, lc, alice, "ou_alice");
    // No webhook in this mode: a callback (unverifiable: no secret is configured) is refused and starts nothing.
    const hook = await fetch(`${h.url}/api/channels/webhooks/feishu`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(feishuText("ev-hook", "ou_alice", "via webhook")) });
    expect(hook.status).toBe(404);

    const frames = Array.from({ length: 5 }, () => lc.push(feishuText("ev-1", "ou_alice", "hello over the socket")));
    await until(() => lastText(fs, "om_in_ev-1") === "You said: hello over the socket", 10_000);
    const replies = repliesTo(fs, "om_in_ev-1");
    expect(replies).toHaveLength(1);
    expect(replies[0].texts.length).toBeGreaterThan(1);
    expect(fs.calls.filter((c) => c.verb === "PATCH" && c.path.endsWith(replies[0].message_id))).toHaveLength(replies[0].texts.length - 1);
    await until(() => frames.every((f) => lc.acks.some((a) => a.messageId === f)));
    expect(lc.acks.filter((a) => frames.includes(a.messageId)).map((a) => a.code)).toEqual([200, 200, 200, 200, 200]);
    expect(repliesTo(fs, "om_in_ev-hook")).toEqual([]);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "feishu", chat_id: "oc_p2p_ou_alice" });
    expect(await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
    // The SDK pings at the interval the endpoint gave (1 s) and the fake's pongs keep the socket: still one.
    await until(() => lc.pings >= 1, 5000);
    expect(lc.connections()).toBe(1);
    expect(lc.opened).toBe(1);
  }, 40_000);

  it("/new starts a new thread, /stop interrupts the answer; a dropped socket reconnects and the next message is answered", async () => {
    const { fs, lc, alice } = await setup({ tokenDelayMs: 100 });
    await connect(fs, lc, alice, "ou_bob");
    lc.push(feishuText("ev-first", "ou_bob", "first"));
    await until(() => lastText(fs, "om_in_ev-first") === "You said: first", 10_000);
    lc.push(feishuText("ev-new", "ou_bob", "/new"));
    await until(() => lastText(fs, "om_in_ev-new") === "New conversation started.");
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
    lc.push(feishuText("ev-long", "ou_bob", long));
    await until(() => (lastText(fs, "om_in_ev-long") ?? "").startsWith("You said: w0 w1"), 10_000);
    lc.push(feishuText("ev-stop", "ou_bob", "/stop"));
    await until(() => lastText(fs, "om_in_ev-stop") === "Stopped.", 10_000);
    await until(() => (lastText(fs, "om_in_ev-long") ?? "").endsWith("(stopped)"), 10_000);
    expect(lastText(fs, "om_in_ev-long")).not.toContain("w59");
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(2);
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs[0].status).toBe("interrupted");

    lc.drop();
    await until(() => lc.opened === 2 && lc.connections() === 1, 15_000);
    lc.push(feishuText("ev-after-drop", "ou_bob", "still there"));
    await until(() => lastText(fs, "om_in_ev-after-drop") === "You said: still there", 10_000);
  }, 60_000);

  it("in groups answers only mentions from allowed users (mention_only, allowed_users); retries a 429 and a 500 from the REST API without losing the run", async () => {
    const { fs, lc, alice } = await setup({ extra: ["    mention_only: true", "    allowed_users: [ou_carol]"] });
    await connect(fs, lc, alice, "ou_carol");
    const group = { chatType: "group" as const, chatId: "oc_group" };
    const mention = { ...group, mentions: [{ key: "@_user_1", name: "bot" }] };
    lc.push(feishuText("ev-g1", "ou_carol", "no mention", group));
    lc.push(feishuText("ev-g2", "ou_dave", "@_user_1 not allowed", mention));
    lc.push(feishuText("ev-g3", "ou_carol", "@_user_1 mentioned", mention));
    await until(() => lastText(fs, "om_in_ev-g3") === "You said: mentioned", 10_000);
    expect(repliesTo(fs, "om_in_ev-g1")).toEqual([]);
    expect(repliesTo(fs, "om_in_ev-g2")).toEqual([]);
    expect(repliesTo(fs, "om_in_ev-g3")[0].reply_in_thread).toBe(true);

    fs.failNext.push(429, 500);
    const start = fs.calls.length;
    lc.push(feishuText("ev-retry", "ou_carol", "after errors"));
    await until(() => lastText(fs, "om_in_ev-retry") === "You said: after errors", 15_000);
    const tries = fs.calls.slice(start).filter((c) => c.method === "reply");
    expect(tries).toHaveLength(3);
    expect(tries[1].at - tries[0].at).toBeGreaterThanOrEqual(950);
    expect(repliesTo(fs, "om_in_ev-retry")).toHaveLength(1);
  }, 40_000);

  it("a refused app secret marks the connection broken in Settings and is logged once; nothing reconnects", async () => {
    const logs: string[] = [];
    const { fs, lc, alice } = await setup({ logs });
    await connect(fs, lc, alice, "ou_erin");
    // The secret is rotated in the console: the platform drops the socket and refuses the old secret from now on.
    fs.appSecret = "rotated";
    lc.drop();
    await until(async () => (await (await alice.fetch("/api/channels/connections")).json()).connections[0]?.status === "broken", 15_000);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "feishu").connection_status).toBe("broken");
    // The line is written after the connection loop ended: no client is left to try again.
    await until(() => logs.some((l) => l.includes("feishu refused the app's credentials")));
    expect(lc.endpointCalls).toEqual([APP_ID, APP_ID]);
    expect(lc.connections()).toBe(0);
    expect(logs.filter((l) => l.includes("feishu refused the app's credentials"))).toHaveLength(1);
    expect(logs.join("\n")).not.toContain("rotated");
    expect(logs.join("\n")).not.toContain(APP_SECRET);
  }, 40_000);

  it("one process holds the long connection (the lease) and another takes over when it stops; a wrong secret at start is refused once", async () => {
    const fake = (fs = await startFeishuFake(APP_ID, APP_SECRET));
    const conn = (lc = await attachLongConnection(fake));
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-feishu-ws-"));
    const store = new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
    cleanups.push(() => { store.close(); rmSync(dir, { recursive: true, force: true }); });
    const section = FeishuSection.parse({ enabled: true, app_id: APP_ID, app_secret: APP_SECRET, domain: fake.url });
    const received: Record<string, string[]> = { a: [], b: [] };
    const make = (holderId: string, s = section) => new FeishuAdapter(s, { logger: pino({ level: "silent" }), lease: store, holderId, leaseMs: 600 });
    const [a, b] = [make("a"), make("b")];
    await a.start(async (m) => void received.a.push(m.eventId));
    await b.start(async (m) => void received.b.push(m.eventId));
    cleanups.push(() => a.stop(), () => b.stop());
    await until(() => conn.connections() === 1, 15_000);
    // Two pings (1 s apart) outlast the 600 ms lease: renewed all along while the other process kept trying to take it.
    await until(() => conn.pings >= 2, 10_000);
    expect(conn.opened).toBe(1);
    conn.push(feishuText("ev-held", "ou_x", "hi"));
    await until(() => received.a.length + received.b.length === 1);
    const first = received.a.length ? a : b;
    const second = first === a ? b : a;
    await first.stop();
    await until(() => conn.opened === 2 && conn.connections() === 1, 15_000);
    conn.push(feishuText("ev-taken-over", "ou_x", "hi again"));
    await until(() => received[second === a ? "a" : "b"].includes("ev-taken-over"));

    await second.stop();
    const bad = make("c", FeishuSection.parse({ enabled: true, app_id: APP_ID, app_secret: "wrong", domain: fake.url }));
    await bad.start(async () => undefined);
    cleanups.push(() => bad.stop());
    await until(() => !bad.receiving, 10_000);
    expect(conn.opened).toBe(2);
    expect(fake.calls.filter((c) => c.method === "internal" && c.body.app_secret === "wrong")).toHaveLength(1);
  }, 60_000);

  it("refuses an app id the long connection cannot use at start, naming the key", async () => {
    const fake = (fs = await startFeishuFake("cli_test", APP_SECRET));
    await expect(startHarness(config(fake))).rejects.toThrow(/channels\.feishu\.app_id must be the app's ID/);
  });
});
