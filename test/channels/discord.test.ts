// Discord channel end to end: the gateway holds a Gateway session with the fake (HELLO, IDENTIFY with intents,
// heartbeats, RESUME after a dropped connection), messages arrive as MESSAGE_CREATE dispatches, answers stream back
// over the REST fake (create message, then edits). Binding by `/connect <code>`, dedupe, mention rules, 429s.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordSection } from "../../src/channels/config.js";
import { DiscordAdapter } from "../../src/channels/discord.js";
import { DISCORD_INTENTS } from "../../src/channels/discord-gateway.js";
import { SqliteChannelStore } from "../../src/channels/store.js";
import { openSqlite } from "../../src/runtime/persistence/sqlite/sqlite.js";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { discordMessage, startDiscordFake, type DiscordFake } from "../support/fakes/discord.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let dc: DiscordFake | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await h?.close();
  await dc?.close();
  for (const c of cleanups.splice(0)) await c();
  h = dc = undefined;
});

function config(fake: DiscordFake, extra: string[] = []): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 15",
    "channels:", "  discord:", "    enabled: true", `    bot_token: ${fake.token}`, `    api_base: ${fake.url}`, "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  discord:", "    enabled: true", "",
  ].join("\n");
}

async function setup(extra: string[] = []): Promise<{ h: Harness; dc: DiscordFake; alice: Session }> {
  dc = await startDiscordFake();
  h = await startHarness(config(dc, extra), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const fake = dc;
  await until(() => fake.connections() === 1);
  return { h, dc, alice };
}

const repliesIn = (fake: DiscordFake, channel: string) => fake.sent.filter((s) => s.channel_id === channel);
const lastText = (fake: DiscordFake, channel: string) => repliesIn(fake, channel).at(-1)?.texts.at(-1);

async function connect(fake: DiscordFake, session: Session, userId: string): Promise<void> {
  const body = await (await session.fetch("/api/channels/discord/connect", { method: "POST" })).json();
  expect(body).toMatchObject({ provider: "discord", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow Discord bot.` });
  fake.dispatch(discordMessage(`m-connect-${userId}`, userId, `/connect ${body.code}`));
  await until(() => lastText(fake, `dm-${userId}`) === "Discord connected to DeerFlow.");
}

describe("Discord channel", () => {
  it("identifies with the message intents, answers a connected user's DM by message edits, runs a message delivered five times once", async () => {
    const { dc, alice } = await setup();
    expect(dc.calls.some((c) => c.verb === "GET" && c.method === "bot")).toBe(true);
    expect(dc.identifies).toHaveLength(1);
    expect(dc.identifies[0]).toMatchObject({ token: dc.token, intents: DISCORD_INTENTS });
    expect(DISCORD_INTENTS & (1 << 15)).toBeTruthy();
    await until(() => dc.heartbeats >= 2);

    dc.dispatch(discordMessage("m-stranger", "111", "hello"));
    await until(() => lastText(dc, "dm-111") !== undefined);
    expect(lastText(dc, "dm-111")).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");

    await connect(dc, alice, "222");
    for (let i = 0; i < 5; i++) dc.dispatch(discordMessage("m-1", "222", "hello discord"));
    await until(() => lastText(dc, "dm-222") === "You said: hello discord", 10_000);
    const answer = repliesIn(dc, "dm-222").filter((s) => s.texts.includes("You said: hello discord"));
    expect(answer).toHaveLength(1);
    // Nothing else was said: no second run, no "already processing" answer to a duplicate.
    expect(repliesIn(dc, "dm-222").map((s) => s.texts[0])).toEqual(["Discord connected to DeerFlow.", answer[0].texts[0]]);
    expect(answer[0].texts.length).toBeGreaterThan(1);
    expect(dc.calls.filter((c) => c.verb === "PATCH")).toHaveLength(answer[0].texts.length - 1);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "discord", chat_id: "dm-222" });
    expect(await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
  });

  it("resumes a dropped session and answers what was sent meanwhile; waits out a 429's retry_after", async () => {
    const { dc, alice } = await setup();
    await connect(dc, alice, "333");
    dc.drop();
    dc.dispatch(discordMessage("m-missed", "333", "while away"));
    await until(() => lastText(dc, "dm-333") === "You said: while away", 10_000);
    expect(dc.resumes).toHaveLength(1);
    expect(dc.resumes[0]).toMatchObject({ session_id: "session-1" });
    expect(dc.identifies).toHaveLength(1);

    dc.failNext.push(429);
    const start = dc.calls.length;
    dc.dispatch(discordMessage("m-429", "333", "rate limited"));
    await until(() => lastText(dc, "dm-333") === "You said: rate limited", 10_000);
    const posts = dc.calls.slice(start).filter((c) => c.verb === "POST");
    expect(posts).toHaveLength(2);
    expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(950);
  });

  it("in servers: allowed_guilds, mention_only with upstream's mention-exempt allowed_channels, replies to the message", async () => {
    const { dc, alice } = await setup(["    mention_only: true", "    thread_mode: false", "    allowed_channels: [c-free]", "    allowed_guilds: [g-1]"]);
    const code = (await (await alice.fetch("/api/channels/discord/connect", { method: "POST" })).json()).code;
    dc.dispatch(discordMessage("m-c", "444", `<@${dc.botId}> /connect ${code}`, { guildId: "g-1", channelId: "c-main", mentions: [dc.botId] }));
    await until(() => lastText(dc, "c-main") === "Discord connected to DeerFlow.");

    dc.dispatch(discordMessage("m-dm", "444", "a DM is outside every guild"));
    dc.dispatch(discordMessage("m-g2", "444", `<@${dc.botId}> other guild`, { guildId: "g-2", channelId: "c-2" }));
    dc.dispatch(discordMessage("m-plain", "444", "no mention", { guildId: "g-1", channelId: "c-main" }));
    dc.dispatch(discordMessage("m-free", "444", "exempt channel", { guildId: "g-1", channelId: "c-free" }));
    dc.dispatch(discordMessage("m-men", "444", `<@${dc.botId}> mentioned`, { guildId: "g-1", channelId: "c-main", mentions: [dc.botId] }));
    await until(() => lastText(dc, "c-main") === "You said: mentioned" && lastText(dc, "c-free") === "You said: exempt channel", 10_000);
    expect(repliesIn(dc, "dm-444")).toEqual([]);
    expect(repliesIn(dc, "c-2")).toEqual([]);
    expect(repliesIn(dc, "c-main").map((s) => s.reply_to)).toEqual(["m-c", "m-men"]);
  });

  it("holds one gateway connection across processes (the lease) and hands over when the holder stops; a refused token stops reconnecting", async () => {
    const fake = (dc = await startDiscordFake());
    const dir = mkdtempSync(path.join(tmpdir(), "dfgw-discord-"));
    const store = new SqliteChannelStore(openSqlite(path.join(dir, "channels.sqlite")));
    cleanups.push(() => { store.close(); rmSync(dir, { recursive: true, force: true }); });
    const section = DiscordSection.parse({ enabled: true, bot_token: fake.token, api_base: fake.url });
    const statuses: string[] = [];
    const setStatus = async (s: "broken" | "connected") => void statuses.push(s);
    const make = (holderId: string) => new DiscordAdapter(section, { logger: pino({ level: "silent" }), lease: store, holderId, leaseMs: 600, setStatus });
    const [a, b] = [make("a"), make("b")];
    await a.start(async () => undefined);
    await b.start(async () => undefined);
    cleanups.push(() => a.stop(), () => b.stop());
    await until(() => fake.connections() === 1);
    // Four heartbeats (200 ms apart) outlast the 600 ms lease: the other process kept polling it all along.
    await until(() => fake.heartbeats >= 4);
    expect(fake.identifies).toHaveLength(1);
    await a.stop();
    await until(() => fake.identifies.length === 2 && fake.connections() === 1, 10_000);
    // Each READY says the bot works (Settings shows `connected` again after a token fix and restart).
    await until(() => statuses.length === 2);
    expect(statuses).toEqual(["connected", "connected"]);

    const bad = new DiscordAdapter(DiscordSection.parse({ enabled: true, bot_token: "wrong", api_base: fake.url, gateway_url: fake.gatewayUrl }), { logger: pino({ level: "silent" }), lease: store, holderId: "c", leaseMs: 600, setStatus });
    await b.stop();
    await bad.start(async () => undefined);
    cleanups.push(() => bad.stop());
    await until(() => !bad.receiving, 10_000);
    expect(fake.identifies.filter((i) => i.token === "wrong")).toHaveLength(1);
    expect(bad.gateway.stats.connections).toBe(1);
    expect(statuses).toEqual(["connected", "connected", "broken"]);
  });

  it("a token Discord refuses (close 4004) marks the Discord connections broken in Settings, logged once", async () => {
    const lines: string[] = [];
    dc = await startDiscordFake();
    const fake = dc;
    h = await startHarness(config(fake, [`    gateway_url: ${fake.gatewayUrl}`]), { authDisabled: false, logger: pino({ level: "info" }, { write: (line: string) => void lines.push(line) }) });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => fake.connections() === 1);
    await connect(fake, alice, "555");
    const connections = async () => (await (await alice.fetch("/api/channels/connections")).json()).connections;
    expect((await connections())[0].status).toBe("connected");

    // The token is reset in the developer portal: the resumed session is invalid, and a new IDENTIFY is refused.
    fake.token = "rotated-token";
    fake.drop();
    await until(async () => (await connections())[0]?.status === "broken", 10_000);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "discord").connection_status).toBe("broken");
    expect(lines.filter((l) => l.includes("discord gateway closed for good"))).toHaveLength(1);
    expect(lines.join("\n")).not.toContain("discord-bot-token");
    // The refused IDENTIFY was the last: nothing reconnects.
    expect(fake.identifies.at(-1)).toMatchObject({ token: "discord-bot-token" });
    expect(fake.identifies).toHaveLength(2);
    expect(fake.connections()).toBe(0);
  });
});
