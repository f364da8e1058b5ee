// Slack channel end to end: Events API webhook deliveries signed with the signing secret, the Web API fake
// (chat.postMessage, chat.update), Slack's `/connect <code>` binding, rate limits and a revoked token.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { signedEvent, slackDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { until } from "../support/wait.js";

const SIGNING_SECRET = "slack-signing-secret";

let h: Harness | undefined;
let slack: SlackFake | undefined;
afterEach(async () => {
  await h?.close();
  await slack?.close();
  h = slack = undefined;
});

async function setup(): Promise<{ h: Harness; slack: SlackFake; alice: Session }> {
  slack = await startSlackFake();
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 10",
    "channels:", "  slack:", "    enabled: true", `    bot_token: ${slack.token}`, `    signing_secret: ${SIGNING_SECRET}`, `    api_base: ${slack.url}`,
    "    stream_edit_interval_ms: 30", "    allowed_channels: [C-ALLOWED]", "    mention_only: true",
    "channel_connections:", "  enabled: true", "  slack:", "    enabled: true", "",
  ].join("\n"), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  return { h, slack, alice };
}

function post(harness: Harness, delivery: { body: string; headers: Record<string, string> }): Promise<Response> {
  return fetch(`${harness.url}/api/channels/webhooks/slack`, { method: "POST", headers: delivery.headers, body: delivery.body });
}

const lastText = (fake: SlackFake, channel: string) => fake.sent.filter((s) => s.channel === channel).at(-1)?.texts.at(-1);

async function connect(harness: Harness, fake: SlackFake, session: Session, user: string): Promise<void> {
  const code = (await (await session.fetch("/api/channels/slack/connect", { method: "POST" })).json()).code;
  expect((await post(harness, signedEvent(SIGNING_SECRET, slackDm(`Ev-connect-${user}`, user, `/connect ${code}`)))).status).toBe(200);
  await until(() => lastText(fake, `D${user}`) === "Slack connected to DeerFlow.");
}

describe("Slack channel", () => {
  it("answers url_verification, verifies signatures (401 on bad, missing or stale, nothing started) and streams a DM by chat.update", async () => {
    const { h, slack, alice } = await setup();
    const challenge = await post(h, signedEvent(SIGNING_SECRET, { type: "url_verification", challenge: "abc123" }));
    expect(await challenge.json()).toEqual({ challenge: "abc123" });
    await connect(h, slack, alice, "U1");
    const calls = slack.calls.length;
    const good = signedEvent(SIGNING_SECRET, slackDm("Ev-1", "U1", "hello slack"));
    expect((await post(h, { ...good, headers: { ...good.headers, "x-slack-signature": "v0=deadbeef" } })).status).toBe(401);
    expect((await post(h, { body: good.body, headers: { "content-type": "application/json" } })).status).toBe(401);
    expect((await post(h, signedEvent(SIGNING_SECRET, slackDm("Ev-1", "U1", "hello slack"), { timestamp: Math.floor(Date.now() / 1000) - 600 }))).status).toBe(401);
    expect((await post(h, signedEvent("another-secret", slackDm("Ev-1", "U1", "hello slack")))).status).toBe(401);
    expect(slack.calls.length).toBe(calls);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);

    expect((await post(h, good)).status).toBe(200);
    await until(() => lastText(slack, "DU1") === "You said: hello slack", 10_000);
    const reply = slack.sent.find((s) => s.texts.includes("You said: hello slack"))!;
    expect(reply.texts.length).toBeGreaterThan(1);
    expect(slack.calls.filter((c) => c.method === "chat.update").length).toBe(reply.texts.length - 1);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
  });

  it("ignores channels outside allowed_channels and unmentioned channel messages", async () => {
    const { h, slack, alice } = await setup();
    await connect(h, slack, alice, "U2");
    const inChannel = (id: string, channel: string, text: string) => ({ type: "event_callback", team_id: "T1", event_id: id, event: { type: "message", channel_type: "channel", channel, user: "U2", text, ts: "1.1" } });
    await post(h, signedEvent(SIGNING_SECRET, inChannel("Ev-a", "C-OTHER", "<@UBOT> hello")));
    await post(h, signedEvent(SIGNING_SECRET, inChannel("Ev-b", "C-ALLOWED", "no mention")));
    await post(h, signedEvent(SIGNING_SECRET, inChannel("Ev-c", "C-ALLOWED", "<@UBOT> mentioned")));
    await until(() => lastText(slack, "C-ALLOWED") === "You said: mentioned", 10_000);
    expect(slack.sent.filter((s) => s.channel === "C-OTHER")).toEqual([]);
    expect(slack.sent.filter((s) => s.channel === "C-ALLOWED")).toHaveLength(1);
    // The answer goes into the message's thread.
    expect(slack.sent.find((s) => s.channel === "C-ALLOWED")!.thread_ts).toBe("1.1");
  });

  it("retries an HTTP 429 after Retry-After; a revoked token marks the connection broken in Settings", async () => {
    const { h, slack, alice } = await setup();
    await connect(h, slack, alice, "U3");
    slack.failNext.push(429);
    const start = slack.calls.length;
    await post(h, signedEvent(SIGNING_SECRET, slackDm("Ev-429", "U3", "rate limited")));
    await until(() => lastText(slack, "DU3") === "You said: rate limited", 10_000);
    const posts = slack.calls.slice(start).filter((c) => c.method === "chat.postMessage");
    expect(posts).toHaveLength(2);
    expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(950);

    slack.tokenValid = false;
    await post(h, signedEvent(SIGNING_SECRET, slackDm("Ev-revoked", "U3", "anyone there")));
    await until(async () => (await (await alice.fetch("/api/channels/connections")).json()).connections[0]?.status === "broken", 10_000);
    const providers = await (await alice.fetch("/api/channels/providers")).json();
    expect(providers.providers.find((p: { provider: string }) => p.provider === "slack").connection_status).toBe("broken");
  });
});
