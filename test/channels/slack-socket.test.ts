// Slack over Socket Mode end to end (upstream's default Slack mode): an unchanged upstream config (bot_token +
// app_token, no signing_secret) starts, the gateway opens a session with the fake (apps.connections.open -> ws),
// envelopes are acked by envelope_id before any work, messages run as the connected user and stream back by
// chat.update. Binding, commands, dedupe of redelivered events, allow-lists, retries, refreshes and a refused token.
import { afterEach, describe, expect, it } from "vitest";
import { BOUND_IDENTITY_REQUIRED_MESSAGE } from "../../src/channels/manager.js";
import { signUp, type Session } from "../support/auth-client.js";
import { captureLogs } from "../support/capture-logs.js";
import { startHarness, type Harness } from "../support/harness.js";
import { socketDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let slack: SlackFake | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
afterEach(async () => {
  await h?.close();
  await slack?.close();
  logs?.restore();
  h = slack = logs = undefined;
});

/** Upstream's Slack section as it ships (bot_token, app_token, allowed_users) plus the API root and `extra` keys. */
const FILE_TOOLS = ["tools:", "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }", "tool_groups: [{ name: file:read }]"];

function config(fake: SlackFake, extra: string[] = [], tokenDelayMs = 10, tools: string[] = []): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", `    token_delay_ms: ${tokenDelayMs}`, ...tools,
    "channels:", "  slack:", "    enabled: true", `    bot_token: ${fake.token}`, `    app_token: ${fake.appToken}`, "    allowed_users: []",
    `    api_base: ${fake.url}`, "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  slack:", "    enabled: true", "",
  ].join("\n");
}

async function setup(options: { extra?: string[]; tokenDelayMs?: number; tools?: string[]; beforeStart?: (fake: SlackFake) => void } = {}): Promise<{ h: Harness; slack: SlackFake; alice: Session }> {
  const fake = (slack = await startSlackFake());
  options.beforeStart?.(fake);
  h = await startHarness(config(fake, options.extra, options.tokenDelayMs, options.tools), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.openSockets() === 1, 10_000);
  return { h, slack: fake, alice };
}

const repliesIn = (fake: SlackFake, channel: string) => fake.sent.filter((s) => s.channel === channel);
const lastText = (fake: SlackFake, channel: string) => repliesIn(fake, channel).at(-1)?.texts.at(-1);

async function connect(fake: SlackFake, session: Session, user: string): Promise<void> {
  const body = await (await session.fetch("/api/channels/slack/connect", { method: "POST" })).json();
  expect(body).toMatchObject({ provider: "slack", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow Slack bot.` });
  fake.pushEvent(socketDm(`Ev-connect-${user}`, user, `/connect ${body.code}`));
  await until(() => lastText(fake, `D${user}`) === "Slack connected to DeerFlow.");
}

describe("Slack Socket Mode", () => {
  it("starts from upstream's config, acks every envelope before the work, answers an unbound user, streams a connected DM, runs an event delivered 5 times once", async () => {
    const { h, slack, alice } = await setup();
    expect(slack.calls.filter((c) => c.method === "apps.connections.open")[0].headers.authorization).toBe(`Bearer ${slack.appToken}`);
    // No events webhook in Socket Mode.
    expect((await fetch(`${h.url}/api/channels/webhooks/slack`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(404);

    slack.pushEvent(socketDm("Ev-stranger", "U9", "hello"));
    await until(() => lastText(slack, "DU9") !== undefined);
    expect(lastText(slack, "DU9")).toBe(BOUND_IDENTITY_REQUIRED_MESSAGE);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);

    await connect(slack, alice, "U1");
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "slack")).toMatchObject({ connectable: true, connection_status: "connected" });

    const ids = Array.from({ length: 5 }, (_, i) => slack.pushEvent(socketDm("Ev-1", "U1", "hello socket"), i));
    await until(() => lastText(slack, "DU1") === "You said: hello socket", 10_000);
    const answer = repliesIn(slack, "DU1").filter((s) => s.texts.includes("You said: hello socket"));
    expect(answer).toHaveLength(1);
    expect(repliesIn(slack, "DU1").map((s) => s.texts[0])).toEqual(["Slack connected to DeerFlow.", answer[0].texts[0]]);
    expect(answer[0].texts.length).toBeGreaterThan(1);
    // Every envelope was acked, within Slack's 3 s, and before the answer was posted.
    await until(() => ids.every((id) => slack.acks.some((a) => a.envelope_id === id)));
    const firstPost = slack.calls.find((c) => c.method === "chat.postMessage" && c.body.text === answer[0].texts[0])!;
    for (const id of ids) {
      const ack = slack.acks.find((a) => a.envelope_id === id)!;
      expect(ack.at - slack.pushed.find((p) => p.envelope_id === id)!.at).toBeLessThan(3000);
    }
    expect(slack.acks.find((a) => a.envelope_id === ids[0])!.at).toBeLessThanOrEqual(firstPost.at);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "slack", chat_id: "DU1" });
    expect(await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json()).toHaveLength(1);
    expect(slack.socketOpens).toBe(1);
  });

  it("/new starts a new thread; /stop interrupts the running answer", async () => {
    const { slack, alice } = await setup({ tokenDelayMs: 100 });
    await connect(slack, alice, "U4");
    slack.pushEvent(socketDm("Ev-first", "U4", "first"));
    await until(() => lastText(slack, "DU4") === "You said: first", 10_000);
    slack.pushEvent(socketDm("Ev-new", "U4", "/new"));
    await until(() => lastText(slack, "DU4") === "New conversation started.");
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
    slack.pushEvent(socketDm("Ev-long", "U4", long));
    await until(() => (lastText(slack, "DU4") ?? "").startsWith("You said: w0 w1"), 10_000);
    slack.pushEvent(socketDm("Ev-stop", "U4", "/stop"));
    await until(() => lastText(slack, "DU4") === "Stopped.", 10_000);
    const streamed = repliesIn(slack, "DU4").find((s) => s.texts.some((t) => t.startsWith("You said: w0")))!;
    await until(() => (streamed.texts.at(-1) ?? "").endsWith("(stopped)"), 10_000);
    expect(streamed.texts.at(-1)).not.toContain("w59");
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(2);
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs[0].status).toBe("interrupted");
  }, 40_000);

  it("applies allowed_users, allowed_channels and mention_only (the bot's id from the envelope's authorizations)", async () => {
    const { slack, alice } = await setup({ extra: ["    allowed_channels: [C-ALLOWED]", "    mention_only: true"] });
    await connect(slack, alice, "U2");
    const inChannel = (id: string, channel: string, text: string) => socketDm(id, "U2", text, { channel, channelType: "channel", ts: "1.1" });
    slack.pushEvent(inChannel("Ev-a", "C-OTHER", "<@UBOT> hello"));
    slack.pushEvent(inChannel("Ev-b", "C-ALLOWED", "no mention"));
    slack.pushEvent(inChannel("Ev-o", "C-ALLOWED", "<@UOTHER> someone else"));
    slack.pushEvent(inChannel("Ev-c", "C-ALLOWED", "<@UBOT> mentioned"));
    await until(() => lastText(slack, "C-ALLOWED") === "You said: mentioned", 10_000);
    expect(repliesIn(slack, "C-OTHER")).toEqual([]);
    expect(repliesIn(slack, "C-ALLOWED")).toHaveLength(1);
    expect(repliesIn(slack, "C-ALLOWED")[0].thread_ts).toBe("1.1");

    // allowed_users is read per message: a user outside it is ignored, no answer at all, bound or not.
    h!.writeConfig(config(slack).replace("allowed_users: []", "allowed_users: [U-SOMEONE]"));
    slack.pushEvent(socketDm("Ev-blocked", "U2", "am I allowed"));
    slack.pushEvent(socketDm("Ev-x", "U9", "unbound, not allowed"));
    slack.pushEvent(socketDm("Ev-someone", "U-SOMEONE", "allowed, unbound"));
    await until(() => lastText(slack, "DU-SOMEONE") === BOUND_IDENTITY_REQUIRED_MESSAGE, 10_000);
    expect(repliesIn(slack, "DU2").map((s) => s.texts.at(-1))).toEqual(["Slack connected to DeerFlow."]);
    expect(repliesIn(slack, "DU9")).toEqual([]);
  });

  it("retries a 500 from apps.connections.open and a 429 / 500 from the Web API; reconnects on refresh_requested without losing a message", async () => {
    const { slack, alice } = await setup({ beforeStart: (fake) => fake.failNext.push(500) });
    expect(slack.calls.filter((c) => c.method === "apps.connections.open")).toHaveLength(2);
    await connect(slack, alice, "U3");

    slack.failNext.push(429);
    const start = slack.calls.length;
    slack.pushEvent(socketDm("Ev-429", "U3", "rate limited"));
    await until(() => lastText(slack, "DU3") === "You said: rate limited", 10_000);
    const posts = slack.calls.slice(start).filter((c) => c.method === "chat.postMessage");
    expect(posts).toHaveLength(2);
    expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(950);

    slack.requestDisconnect("refresh_requested");
    await until(() => slack.socketOpens === 2 && slack.openSockets() === 1, 10_000);
    expect(slack.calls.filter((c) => c.method === "apps.connections.open")).toHaveLength(3);
    slack.pushEvent(socketDm("Ev-after-refresh", "U3", "after a refresh"));
    await until(() => lastText(slack, "DU3") === "You said: after a refresh", 10_000);
    slack.requestDisconnect("warning");
    await until(() => slack.socketOpens === 3 && slack.openSockets() === 1, 10_000);
    // A session closed before its hello is opened again (with a fresh URL), not given up.
    slack.closeBeforeHello = 1;
    const opens = slack.calls.filter((c) => c.method === "apps.connections.open").length;
    slack.requestDisconnect("refresh_requested");
    await until(() => slack.socketOpens === 4 && slack.openSockets() === 1, 10_000);
    expect(slack.calls.filter((c) => c.method === "apps.connections.open").length - opens).toBe(2);
    slack.failNext.push(500);
    slack.pushEvent(socketDm("Ev-500", "U3", "after a 500"));
    await until(() => lastText(slack, "DU3") === "You said: after a 500", 10_000);
  });

  it("a refused app token marks the connection broken in Settings, logged once, with no retry storm", async () => {
    logs = captureLogs();
    const { slack, alice } = await setup();
    await connect(slack, alice, "U5");
    slack.appTokenValid = false;
    const before = slack.calls.filter((c) => c.method === "apps.connections.open").length;
    slack.requestDisconnect("refresh_requested");
    await until(async () => (await (await alice.fetch("/api/channels/connections")).json()).connections[0]?.status === "broken", 10_000);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "slack").connection_status).toBe("broken");
    expect(slack.calls.filter((c) => c.method === "apps.connections.open").length - before).toBe(1);
    expect(slack.openSockets()).toBe(0);
    const refused = logs.lines().filter((l) => l.msg === "slack socket mode refused; the channel stops receiving");
    expect(refused).toHaveLength(1);
    expect(refused[0].err).toContain("invalid_auth");
    expect(JSON.stringify(logs.lines())).not.toContain(slack.appToken);
  });

  it("a file shared over Socket Mode becomes an upload the agent reads", async () => {
    const { slack, alice } = await setup({ tools: FILE_TOOLS });
    await connect(slack, alice, "U6");
    const payload = socketDm("Ev-file", "U6", '!call read_file {"description":"read","path":"/mnt/user-data/uploads/data.csv"}');
    Object.assign(payload.event as Record<string, unknown>, { subtype: "file_share", files: [slack.addFile("data.csv", Buffer.from("city,temp\nParis,21\n"))] });
    slack.pushEvent(payload);
    await until(() => (lastText(slack, "DU6") ?? "").includes("Paris,21"), 15_000);
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect((await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json()).files).toEqual([expect.objectContaining({ filename: "data.csv", size: 19 })]);
  }, 30_000);

  it("config: neither app_token nor signing_secret stops the start naming both; with both, Socket Mode is used", async () => {
    const fake = (slack = await startSlackFake());
    const noMode = config(fake).replace(`    app_token: ${fake.appToken}\n`, "");
    await expect(startHarness(noMode)).rejects.toThrow(/channels\.slack needs app_token .* or signing_secret/);
    h = await startHarness(config(fake, ["    signing_secret: also-set"]));
    await until(() => fake.openSockets() === 1, 10_000);
    expect((await fetch(`${h.url}/api/channels/webhooks/slack`, { method: "POST", body: "{}" })).status).toBe(404);
  });
});
