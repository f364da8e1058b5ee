// WeCom intelligent bot end to end: the gateway holds the long connection with the fake (aibot_subscribe with
// bot_id + secret, heartbeats), messages arrive as aibot_msg_callback frames, answers stream back as native `stream`
// replies on the message's req_id (each frame the whole text so far, the last one finished). Binding by
// `/connect <code>`, /new and /stop, dedupe, allow-lists, errcode retries, the lease across processes, a refused
// secret marking the connections broken.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { WecomSection, readChannelSettings } from "../../src/channels/config.js";
import { SqliteChannelStore } from "../../src/channels/store.js";
import { WecomAdapter } from "../../src/channels/wecom.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startWecomFake, wecomMessage, type WecomFake } from "../support/fakes/wecom.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let wc: WecomFake | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await h?.close();
  await wc?.close();
  for (const c of cleanups.splice(0)) await c();
  h = wc = undefined;
});

function config(fake: WecomFake, extra: string[] = [], tokenDelayMs = 15): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", `    token_delay_ms: ${tokenDelayMs}`,
    "channels:", "  wecom:", "    enabled: true", `    bot_id: ${fake.botId}`, `    bot_secret: ${fake.secret}`, `    ws_url: ${fake.url}`, "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  wecom:", "    enabled: true", "",
  ].join("\n");
}

async function setup(options: { extra?: string[]; tokenDelayMs?: number; logs?: string[] } = {}): Promise<{ h: Harness; wc: WecomFake; alice: Session }> {
  wc = await startWecomFake();
  const logger = options.logs ? pino({ level: "info" }, { write: (line: string) => void options.logs!.push(line) }) : undefined;
  h = await startHarness(config(wc, options.extra, options.tokenDelayMs), { authDisabled: false, logger });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const fake = wc;
  await until(() => fake.connections() === 1);
  return { h, wc, alice };
}

/** The streams answering messages of `chat` (the req_ids delivered there), in order. */
const streamsIn = (fake: WecomFake, reqIds: Set<string>) => fake.streams.filter((s) => reqIds.has(s.reqId));
/** A chat's delivered req_ids, so its replies can be told apart. */
function chat(fake: WecomFake, userId: string, chatId?: string) {
  const reqIds = new Set<string>();
  let n = 0;
  return {
    reqIds,
    say: (text: string, msgid = `${userId}-${chatId ?? "dm"}-${n++}`) => {
      const reqId = fake.deliver(wecomMessage(msgid, userId, text, { chatId }));
      reqIds.add(reqId);
      return reqId;
    },
    last: () => streamsIn(fake, reqIds).at(-1),
    lastText: () => streamsIn(fake, reqIds).at(-1)?.texts.at(-1),
  };
}

async function connect(fake: WecomFake, session: Session, userId: string): Promise<ReturnType<typeof chat>> {
  const body = await (await session.fetch("/api/channels/wecom/connect", { method: "POST" })).json();
  expect(body).toMatchObject({ provider: "wecom", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow WeCom bot.` });
  const dm = chat(fake, userId);
  dm.say(`/connect ${body.code}`);
  await until(() => dm.lastText() === "WeCom connected to DeerFlow.");
  expect(dm.last()?.finished).toBe(true);
  return dm;
}

describe("WeCom channel", () => {
  it("subscribes with bot_id + secret, answers a connected user's DM as a finished stream, runs a message delivered five times once", async () => {
    const { wc, alice } = await setup();
    expect(wc.calls.filter((c) => c.cmd === "aibot_subscribe").map((c) => c.body)).toEqual([{ bot_id: wc.botId, secret: wc.secret }]);

    const stranger = chat(wc, "u-stranger");
    stranger.say("hello");
    await until(() => stranger.last()?.finished === true);
    expect(stranger.lastText()).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");

    const dm = await connect(wc, alice, "u-alice");
    const reqId = wc.deliver(wecomMessage("msg-1", "u-alice", "hello wecom"));
    dm.reqIds.add(reqId);
    for (let i = 0; i < 4; i++) wc.deliver(wecomMessage("msg-1", "u-alice", "hello wecom"), reqId);
    await until(() => dm.last()?.finished === true && dm.lastText() === "You said: hello wecom", 10_000);
    const answers = wc.streams.filter((s) => s.reqId === reqId);
    expect(answers).toHaveLength(1);
    // Streamed: several frames of growing text on one stream id, only the last one finished.
    expect(answers[0].texts.length).toBeGreaterThan(1);
    expect("You said: hello wecom".startsWith(answers[0].texts[0])).toBe(true);
    expect(wc.calls.filter((c) => c.cmd === "aibot_respond_msg" && c.body.stream?.id === answers[0].id).map((c) => c.body.stream.finish)).toEqual([...answers[0].texts.slice(1).map(() => false), true]);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "wecom", chat_id: "u-alice" });
    expect(await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);

    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "wecom")).toMatchObject({ display_name: "WeCom", connectable: true, connection_status: "connected", auth_mode: "binding_code" });
  }, 30_000);

  it("/new starts a new thread; /stop interrupts the running answer, which ends finished and marked stopped", async () => {
    const { wc, alice } = await setup({ tokenDelayMs: 100 });
    const dm = await connect(wc, alice, "u-bob");
    dm.say("first");
    await until(() => dm.lastText() === "You said: first" && dm.last()?.finished === true, 10_000);
    dm.say("/new");
    await until(() => dm.lastText() === "New conversation started.");
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
    const longReq = dm.say(long);
    await until(() => (wc.streams.find((s) => s.reqId === longReq)?.texts.at(-1) ?? "").startsWith("You said: w0 w1"), 10_000);
    dm.say("/stop");
    await until(() => dm.lastText() === "Stopped.", 10_000);
    const streamed = wc.streams.find((s) => s.reqId === longReq)!;
    await until(() => streamed.finished, 10_000);
    expect(streamed.texts.at(-1)).toMatch(/^You said: w0 .*\n\n\(stopped\)$/s);
    expect(streamed.texts.at(-1)).not.toContain("w59");
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(2);
  }, 40_000);

  it("answers the reply to a clarification question, which has no message to stream onto, as a markdown message", async () => {
    const { wc, alice } = await setup();
    const dm = await connect(wc, alice, "u-gina");
    dm.say('!call ask_clarification {"question":"Which city do you mean?","clarification_type":"missing_info"}');
    await until(() => dm.last()?.finished === true && (dm.lastText() ?? "").includes("Which city do you mean?"), 15_000);
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    await until(async () => (await (await alice.fetch(`/api/threads/${thread.thread_id}/runs`)).json()).every((r: { status: string }) => r.status === "success"));
    dm.say("Paris");
    await until(() => wc.proactive.some((p) => p.chatid === "u-gina" && p.content === "You said: Paris"), 15_000);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toHaveLength(1);
    expect(await (await alice.fetch(`/api/threads/${thread.thread_id}/runs`)).json()).toHaveLength(2);
  }, 30_000);

  it("applies allowed_users and allowed_channels; group messages answer in the group with the mention stripped", async () => {
    const { wc, alice } = await setup({ extra: ["    allowed_users: [u-carol]", "    allowed_channels: [g-ok]"] });
    const dm = await connect(wc, alice, "u-carol");
    const other = chat(wc, "u-dave");
    other.say("not on the list");
    const badGroup = chat(wc, "u-carol", "g-bad");
    badGroup.say("@DeerFlow other group");
    const group = chat(wc, "u-carol", "g-ok");
    group.say("@DeerFlow in the group");
    await until(() => group.lastText() === "You said: in the group" && group.last()?.finished === true, 10_000);
    dm.say("after");
    await until(() => dm.lastText() === "You said: after", 10_000);
    expect(streamsIn(wc, other.reqIds)).toEqual([]);
    expect(streamsIn(wc, badGroup.reqIds)).toEqual([]);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads.map((t: { metadata: { channel_source: { chat_id: string } } }) => t.metadata.channel_source.chat_id).sort()).toEqual(["g-ok", "u-carol"]);
  }, 30_000);

  it("retries a reply WeCom answers with a frequency limit (45009) or busy (-1): the answer still arrives", async () => {
    const { wc, alice } = await setup();
    const dm = await connect(wc, alice, "u-erin");
    wc.failNext.push(45009, -1);
    const from = wc.calls.length;
    dm.say("rate limited");
    await until(() => dm.lastText() === "You said: rate limited" && dm.last()?.finished === true, 15_000);
    const replies = wc.calls.slice(from).filter((c) => c.cmd === "aibot_respond_msg");
    // The first frame was refused twice and sent again: the same stream id and content three times.
    expect(replies[0].body.stream.id).toBe(replies[1].body.stream.id);
    expect(replies[1].body.stream.content).toBe(replies[0].body.stream.content);
    expect(replies[1].at - replies[0].at).toBeGreaterThanOrEqual(950);
    expect(replies[2].body.stream.content).toBe(replies[0].body.stream.content);
  }, 30_000);

  it("a secret WeCom refuses marks the connections broken and is logged once", async () => {
    const logs: string[] = [];
    const { wc, alice } = await setup({ logs });
    await connect(wc, alice, "u-frank");
    const before = wc.calls.length;
    wc.secret = "rotated";
    wc.drop();
    await until(async () => (await (await alice.fetch("/api/channels/connections")).json()).connections[0]?.status === "broken", 20_000);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "wecom").connection_status).toBe("broken");
    // Three subscriptions in all with the refused secret (two retries), then nothing reconnects.
    expect(wc.calls.slice(before).filter((c) => c.cmd === "aibot_subscribe")).toHaveLength(3);
    expect(logs.filter((l) => l.includes("wecom refused bot_id / bot_secret"))).toHaveLength(1);
    expect(logs.join("\n")).not.toContain("wecom-secret");
  }, 40_000);

  it("holds one long connection across processes (the lease) and hands over when the holder stops", async () => {
    const fake = (wc = await startWecomFake());
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-wecom-"));
    const store = new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
    cleanups.push(() => { store.close(); rmSync(dir, { recursive: true, force: true }); });
    const section = WecomSection.parse({ enabled: true, bot_id: fake.botId, bot_secret: fake.secret, ws_url: fake.url });
    const received: Record<string, string[]> = { a: [], b: [] };
    const make = (holderId: string) => new WecomAdapter(section, { logger: pino({ level: "silent" }), lease: store, holderId, leaseMs: 600, heartbeatMs: 200 });
    const [a, b] = [make("a"), make("b")];
    await a.start(async (m) => void received.a.push(m.text));
    await b.start(async (m) => void received.b.push(m.text));
    cleanups.push(() => a.stop(), () => b.stop());
    await until(() => fake.connections() === 1);
    // Four heartbeats (200 ms apart) outlast the 600 ms lease: the holder kept renewing it, the other kept waiting.
    await until(() => fake.calls.filter((c) => c.cmd === "ping").length >= 4);
    expect(fake.calls.filter((c) => c.cmd === "aibot_subscribe")).toHaveLength(1);
    const first = a.stats.authenticated === 1 ? a : b;
    const second = first === a ? b : a;
    fake.deliver(wecomMessage("m-1", "u-1", "to the holder"));
    await until(() => [...received.a, ...received.b].length === 1);
    await first.stop();
    await until(() => fake.calls.filter((c) => c.cmd === "aibot_subscribe").length === 2 && fake.connections() === 1, 10_000);
    expect(second.stats.authenticated).toBe(1);
    fake.deliver(wecomMessage("m-2", "u-1", "to the new holder"));
    await until(() => received[second === a ? "a" : "b"].includes("to the new holder"));
  }, 30_000);

  it("starts an unchanged upstream section (bot_id, bot_secret) on the public endpoint; refuses working_message, naming it", async () => {
    const settings = readChannelSettings({ channels: { wecom: { enabled: true, bot_id: "b", bot_secret: "s" } }, channel_connections: { enabled: true, wecom: { enabled: true } } });
    expect(settings.channels.wecom).toMatchObject({ ws_url: "wss://openws.work.weixin.qq.com", bot_id: "b" });
    const fake = (wc = await startWecomFake());
    await expect(startHarness(config(fake, ["    working_message: Thinking..."]))).rejects.toThrow(/channels\.wecom\.working_message is not offered/);
    await expect(startHarness(config(fake).replace(`    bot_secret: ${fake.secret}\n`, ""))).rejects.toThrow(/channels\.wecom\.bot_id and bot_secret are required/);
  });
});
