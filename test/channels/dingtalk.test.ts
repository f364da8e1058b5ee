// DingTalk channel end to end: the gateway opens a Stream connection with the fake (connections/open -> endpoint +
// ticket -> websocket), chatbot messages arrive as CALLBACK frames (each ACKed), answers go out over the robot API
// with an app access token (batchSend to a user, groupMessages/send to a group). Binding by `/connect <code>`, dedupe,
// commands, allow-lists, 429 / 500 retries, refused credentials, the stream lease across processes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { DingTalkSection } from "../../src/channels/config.js";
import { DingTalkAdapter } from "../../src/channels/dingtalk.js";
import { SqliteChannelStore } from "../../src/channels/store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { readFramesUntil } from "../support/sse.js";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let dt: DingTalkFake | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await h?.close();
  await dt?.close();
  for (const c of cleanups.splice(0)) await c();
  h = dt = undefined;
});

function config(fake: DingTalkFake, extra: string[] = [], tokenDelayMs = 15): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", `    token_delay_ms: ${tokenDelayMs}`,
    "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, ...(extra.some((l) => l.includes("allowed_users")) ? [] : ["    allowed_users: []"]), '    card_template_id: ""', `    api_base: ${fake.url}`, ...extra,
    "channel_connections:", "  enabled: true", "  dingtalk:", "    enabled: true", "",
  ].join("\n");
}

/** A pino logger whose lines are kept in `lines` (parsed). */
function capturingLogger(): { logger: pino.Logger; lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l)); done(); } });
  return { logger: pino({ level: "info" }, stream), lines };
}

async function setup(options: { extra?: string[]; tokenDelayMs?: number; logger?: pino.Logger } = {}): Promise<{ h: Harness; dt: DingTalkFake; alice: Session }> {
  dt = await startDingTalkFake();
  h = await startHarness(config(dt, options.extra, options.tokenDelayMs), { authDisabled: false, logger: options.logger });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const fake = dt;
  await until(() => fake.connections() === 1);
  return { h, dt, alice };
}

const to = (fake: DingTalkFake, chat: string) => fake.sent.filter((s) => s.chat === chat);
const lastText = (fake: DingTalkFake, chat: string) => to(fake, chat).at(-1)?.text;

async function connect(fake: DingTalkFake, session: Session, userId: string): Promise<void> {
  const body = await (await session.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json();
  expect(body).toMatchObject({ provider: "dingtalk", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow DingTalk bot.` });
  fake.push(dingtalkText(`m-connect-${userId}`, userId, `/connect ${body.code}`));
  await until(() => lastText(fake, userId) === "DingTalk connected to DeerFlow.");
}

describe("DingTalk channel", () => {
  it("opens a Stream connection, answers a connected user's DM, runs a message delivered five times once", async () => {
    const { dt, alice } = await setup();
    expect(dt.opens[0]).toMatchObject({ clientId: dt.clientId, clientSecret: dt.clientSecret, subscriptions: [{ type: "CALLBACK", topic: "/v1.0/im/bot/messages/get" }] });
    dt.ping();
    await until(() => dt.pongs.length === 1);
    expect(dt.pongs[0]).toMatchObject({ code: 200, data: JSON.stringify({ opaque: "x" }) });

    const stranger = dt.push(dingtalkText("m-stranger", "staff-1", "hello"));
    await until(() => lastText(dt, "staff-1") !== undefined);
    expect(lastText(dt, "staff-1")).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");
    expect(dt.acks.get(stranger)).toMatchObject({ code: 200, headers: { messageId: stranger }, data: JSON.stringify({ response: "OK" }) });
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);

    await connect(dt, alice, "staff-2");
    const frames = Array.from({ length: 5 }, () => dt.push(dingtalkText("m-1", "staff-2", "hello **dingtalk**")));
    await until(() => lastText(dt, "staff-2") === "You said: hello **dingtalk**", 10_000);
    await until(() => frames.every((f) => dt.acks.has(f)));
    // Nothing else was said: no second run, no "already processing" answer to a duplicate.
    expect(to(dt, "staff-2").map((s) => s.text)).toEqual(["DingTalk connected to DeerFlow.", "You said: hello **dingtalk**"]);
    expect(to(dt, "staff-2").map((s) => [s.to, s.msgKey, s.title])).toEqual([["user", "sampleMarkdown", "DeerFlow"], ["user", "sampleMarkdown", "DeerFlow"]]);
    // The token is fetched once and reused.
    expect(dt.calls.filter((c) => c.method === "accessToken")).toHaveLength(1);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "dingtalk", chat_id: "staff-2" });
    expect(await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
    const providers = (await (await alice.fetch("/api/channels/providers")).json()).providers;
    expect(providers.find((p: { provider: string }) => p.provider === "dingtalk")).toMatchObject({ display_name: "DingTalk", connectable: true, auth_mode: "binding_code", connection_status: "connected" });
  });

  it("/new starts a new thread; /stop interrupts the running answer", async () => {
    const { dt, alice } = await setup({ tokenDelayMs: 100 });
    await connect(dt, alice, "staff-3");
    dt.push(dingtalkText("m-first", "staff-3", "first"));
    await until(() => lastText(dt, "staff-3") === "You said: first", 10_000);
    dt.push(dingtalkText("m-new", "staff-3", "/new"));
    await until(() => lastText(dt, "staff-3") === "New conversation started.");
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
    dt.push(dingtalkText("m-long", "staff-3", long));
    let running: { thread_id: string; run_id: string } | undefined;
    await until(async () => {
      const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
      const runs = threads.length === 2 ? await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json() : [];
      running = runs[0];
      return running !== undefined;
    }, 10_000);
    // Stop once some of the answer was written (its tokens on the run's stream).
    const live = await readFramesUntil(await alice.fetch(`/api/threads/${running!.thread_id}/runs/${running!.run_id}/stream`), (frames) => frames.filter((f) => f.event === "messages").length >= 4);
    await live.cancel();
    dt.push(dingtalkText("m-stop", "staff-3", "/stop"));
    await until(() => to(dt, "staff-3").some((s) => s.text === "Stopped."), 10_000);
    // The answer is sent once the run ends: the part written before the stop, with the stop notice.
    await until(() => (lastText(dt, "staff-3") ?? "").endsWith("(stopped)"), 10_000);
    expect(lastText(dt, "staff-3")).toMatch(/^You said: w0 .*\n\n\(stopped\)$/s);
    expect(lastText(dt, "staff-3")).not.toContain("w59");
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs[0].status).toBe("interrupted");
  }, 40_000);

  it("in groups: mention-only, allow-lists; the answer goes to the group through groupMessages/send", async () => {
    const { dt, alice } = await setup({ extra: ["    mention_only: true", "    allowed_channels: [cid-ok]", "    allowed_users: [staff-4]"] });
    const code = (await (await alice.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json()).code;
    dt.push(dingtalkText("m-gc", "staff-4", `/connect ${code}`, { group: "cid-ok" }));
    await until(() => lastText(dt, "cid-ok") === "DingTalk connected to DeerFlow.");
    dt.push(dingtalkText("m-other-group", "staff-4", "not allowed here", { group: "cid-no" }));
    dt.push(dingtalkText("m-no-at", "staff-4", "no mention", { group: "cid-ok", atBot: false }));
    dt.push(dingtalkText("m-other-user", "staff-9", "not on the list", { group: "cid-ok" }));
    dt.push(dingtalkText("m-at", "staff-4", "mentioned", { group: "cid-ok" }));
    await until(() => lastText(dt, "cid-ok") === "You said: mentioned", 10_000);
    expect(to(dt, "cid-ok").map((s) => [s.to, s.text])).toEqual([["group", "DingTalk connected to DeerFlow."], ["group", "You said: mentioned"]]);
    expect(to(dt, "cid-no")).toEqual([]);
    expect(dt.sent.filter((s) => s.chat === "staff-9")).toEqual([]);
  });

  it("retries a 429 (after Retry-After) and a 500 from the robot API; the answer still arrives", async () => {
    const { dt, alice } = await setup();
    await connect(dt, alice, "staff-5");
    const start = dt.calls.length;
    dt.push(dingtalkText("m-429", "staff-5", "rate limited"));
    dt.failNext.push(429, 500);
    await until(() => lastText(dt, "staff-5") === "You said: rate limited", 10_000);
    const sends = dt.calls.slice(start).filter((c) => c.method === "batchSend");
    expect(sends).toHaveLength(3);
    expect(sends[1].at - sends[0].at).toBeGreaterThanOrEqual(950);
    expect(to(dt, "staff-5").filter((s) => s.text === "You said: rate limited")).toHaveLength(1);
  });

  it("refused credentials mark the connection broken, logged once, and the stream is not reopened", async () => {
    const { logger, lines } = capturingLogger();
    const { dt, alice } = await setup({ logger });
    await connect(dt, alice, "staff-6");
    dt.revoke();
    dt.disconnect();
    await until(async () => (await (await alice.fetch("/api/channels/connections")).json()).connections[0]?.status === "broken", 10_000);
    const providers = (await (await alice.fetch("/api/channels/providers")).json()).providers;
    expect(providers.find((p: { provider: string }) => p.provider === "dingtalk").connection_status).toBe("broken");
    await until(() => lines.some((l) => String(l.msg).includes("dingtalk stream refused")));
    expect(lines.filter((l) => String(l.msg).includes("dingtalk stream refused"))).toHaveLength(1);
    // One refused open-connection call, no retries of it (the loop ended with the refusal it logged).
    const refused = dt.calls.filter((c) => c.method === "open").slice(1);
    expect(refused).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain(dt.clientSecret);
  });

  it("holds one Stream connection across processes (the lease) and hands over when the holder stops", async () => {
    const fake = (dt = await startDingTalkFake());
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-dingtalk-"));
    const store = new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
    cleanups.push(() => { store.close(); rmSync(dir, { recursive: true, force: true }); });
    const section = DingTalkSection.parse({ enabled: true, client_id: fake.clientId, client_secret: fake.clientSecret, api_base: fake.url });
    const received: string[] = [];
    const make = (holderId: string) => new DingTalkAdapter(section, { logger: pino({ level: "silent" }), lease: store, holderId, leaseMs: 600 });
    const [a, b] = [make("a"), make("b")];
    await a.start(async (m) => { received.push(`a:${m.eventId}`); });
    await b.start(async (m) => { received.push(`b:${m.eventId}`); });
    cleanups.push(() => a.stop(), () => b.stop());
    await until(() => fake.connections() === 1);
    // Pings answered over 1.5 s, well past the 600 ms lease: the holder kept renewing it while the other kept asking.
    const since = Date.now();
    await until(() => { fake.ping(); return fake.pongs.length >= 5 && Date.now() - since >= 1500; }, 10_000, 100);
    expect(fake.accepted()).toBe(1);
    fake.push(dingtalkText("m-a", "s", "one"));
    await until(() => received.length === 1);
    const first = received[0].split(":")[0];
    await (first === "a" ? a : b).stop();
    await until(() => fake.accepted() === 2 && fake.connections() === 1, 10_000);
    fake.push(dingtalkText("m-b", "s", "two"));
    await until(() => received.length === 2);
    expect(received[1].split(":")[0]).not.toBe(first);
  });
});
