// Feishu / Lark channel end to end: event callbacks delivered to the gateway over HTTP as Feishu sends them with an
// Encrypt Key (AES envelope + X-Lark-Signature) or a Verification Token, the Open Platform fake (tenant token,
// card replies, PATCH while streaming), `/connect <code>` binding, dedupe, group mentions, rate limits.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { encryptedEvent, feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { until } from "../support/wait.js";

const ENCRYPT_KEY = "feishu-encrypt-key";
const VTOKEN = "vtoken";

let h: Harness | undefined;
let fs: FeishuFake | undefined;
afterEach(async () => {
  await h?.close();
  await fs?.close();
  h = fs = undefined;
});

function config(fake: FeishuFake, extra: string[] = [], secrets = [`    encrypt_key: ${ENCRYPT_KEY}`, `    verification_token: ${VTOKEN}`]): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 15",
    "channels:", "  feishu:", "    enabled: true", `    app_id: ${fake.appId}`, `    app_secret: ${fake.appSecret}`, `    domain: ${fake.url}`,
    "    mode: webhook", ...secrets, "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  feishu:", "    enabled: true", "",
  ].join("\n");
}

async function setup(extra: string[] = [], secrets?: string[]): Promise<{ h: Harness; fs: FeishuFake; alice: Session }> {
  fs = await startFeishuFake();
  h = await startHarness(config(fs, extra, secrets), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  return { h, fs, alice };
}

function post(harness: Harness, delivery: { body: string; headers: Record<string, string> }): Promise<Response> {
  return fetch(`${harness.url}/api/channels/webhooks/feishu`, { method: "POST", headers: delivery.headers, body: delivery.body });
}

const deliver = (harness: Harness, payload: Record<string, unknown>) => post(harness, encryptedEvent(ENCRYPT_KEY, payload));
const repliesTo = (fake: FeishuFake, messageId: string) => fake.sent.filter((s) => s.reply_to === messageId);
const lastText = (fake: FeishuFake, messageId: string) => repliesTo(fake, messageId).at(-1)?.texts.at(-1);

async function connect(harness: Harness, fake: FeishuFake, session: Session, openId: string): Promise<void> {
  const res = await session.fetch("/api/channels/feishu/connect", { method: "POST" });
  const body = await res.json();
  expect(body).toMatchObject({ provider: "feishu", mode: "binding_code", instruction: `Send /connect ${body.code} to the DeerFlow Feishu bot.` });
  expect((await deliver(harness, feishuText(`ev-connect-${openId}`, openId, `/connect ${body.code}`))).status).toBe(200);
  await until(() => lastText(fake, `om_in_ev-connect-${openId}`) === "Feishu connected to DeerFlow.");
}

describe("Feishu channel", () => {
  it("answers the encrypted challenge, refuses bad signatures and tokens (401, nothing started), streams a DM by patching the reply card", async () => {
    const { h, fs, alice } = await setup();
    const challenge = await deliver(h, { type: "url_verification", challenge: "c-123", token: VTOKEN });
    expect(await challenge.json()).toEqual({ challenge: "c-123" });
    expect((await deliver(h, { type: "url_verification", challenge: "c-123", token: "wrong" })).status).toBe(401);

    // An unbound identity gets upstream's answer and starts nothing.
    await deliver(h, feishuText("ev-stranger", "ou_stranger", "hello"));
    await until(() => lastText(fs, "om_in_ev-stranger") !== undefined);
    expect(lastText(fs, "om_in_ev-stranger")).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");

    await connect(h, fs, alice, "ou_alice");
    const calls = fs.calls.length;
    const good = encryptedEvent(ENCRYPT_KEY, feishuText("ev-1", "ou_alice", "hello feishu"));
    expect((await post(h, { ...good, headers: { ...good.headers, "x-lark-signature": "0".repeat(64) } })).status).toBe(401);
    expect((await post(h, { body: good.body, headers: { "content-type": "application/json" } })).status).toBe(401);
    expect((await post(h, encryptedEvent(ENCRYPT_KEY, feishuText("ev-1", "ou_alice", "hello feishu"), { signWith: "another-key" }))).status).toBe(401);
    expect((await post(h, encryptedEvent("another-key", feishuText("ev-1", "ou_alice", "hello feishu")))).status).toBe(401);
    expect((await post(h, { body: JSON.stringify(feishuText("ev-1", "ou_alice", "hello feishu")), headers: { "content-type": "application/json" } })).status).toBe(401);
    expect((await deliver(h, feishuText("ev-2", "ou_alice", "hello", { token: "wrong-token" }))).status).toBe(401);
    expect(fs.calls.length).toBe(calls);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);

    // The same event delivered five times (Feishu redelivers until answered) runs once.
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(h, good)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    await until(() => lastText(fs, "om_in_ev-1") === "You said: hello feishu", 10_000);
    const replies = repliesTo(fs, "om_in_ev-1");
    expect(replies).toHaveLength(1);
    expect(replies[0].texts.length).toBeGreaterThan(1);
    expect(replies[0].reply_in_thread).toBe(false);
    expect(fs.calls.filter((c) => c.verb === "PATCH")).toHaveLength(replies[0].texts.length - 1);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "feishu", chat_id: "oc_p2p_ou_alice" });
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs).toHaveLength(1);
    // One tenant token served every call.
    expect(fs.tokens).toHaveLength(1);
  });

  it("fetches a new tenant token when the platform says it is stale, and waits out a 429", async () => {
    const { h, fs, alice } = await setup();
    await connect(h, fs, alice, "ou_bob");
    fs.expireTokens();
    await deliver(h, feishuText("ev-stale", "ou_bob", "after expiry"));
    await until(() => lastText(fs, "om_in_ev-stale") === "You said: after expiry", 10_000);
    expect(fs.tokens).toHaveLength(2);

    fs.failNext.push(429);
    const start = fs.calls.length;
    await deliver(h, feishuText("ev-429", "ou_bob", "rate limited"));
    await until(() => lastText(fs, "om_in_ev-429") === "You said: rate limited", 10_000);
    const replies = fs.calls.slice(start).filter((c) => c.method === "reply");
    expect(replies).toHaveLength(2);
    expect(replies[1].at - replies[0].at).toBeGreaterThanOrEqual(950);
  });

  it("in groups answers only mentions (mention_only) from allowed users, in the message's thread; a plain verification token works without encryption", async () => {
    const { h, fs, alice } = await setup(["    mention_only: true", "    allowed_users: [ou_carol]"], [`    verification_token: ${VTOKEN}`]);
    const plain = (payload: Record<string, unknown>) => post(h, { body: JSON.stringify(payload), headers: { "content-type": "application/json" } });
    const code = (await (await alice.fetch("/api/channels/feishu/connect", { method: "POST" })).json()).code;
    await plain(feishuText("ev-c", "ou_carol", `/connect ${code}`));
    await until(() => lastText(fs, "om_in_ev-c") === "Feishu connected to DeerFlow.");
    expect((await plain(feishuText("ev-bad", "ou_carol", "hi", { token: "nope" }))).status).toBe(401);

    const group = { chatType: "group" as const, chatId: "oc_group" };
    await plain(feishuText("ev-g1", "ou_carol", "no mention", group));
    await plain(feishuText("ev-g2", "ou_dave", "@_user_1 not allowed", { ...group, mentions: [{ key: "@_user_1", name: "bot" }] }));
    await plain(feishuText("ev-g3", "ou_carol", "@_user_1 mentioned", { ...group, mentions: [{ key: "@_user_1", name: "bot" }] }));
    await until(() => lastText(fs, "om_in_ev-g3") === "You said: mentioned", 10_000);
    expect(repliesTo(fs, "om_in_ev-g1")).toEqual([]);
    expect(repliesTo(fs, "om_in_ev-g2")).toEqual([]);
    expect(repliesTo(fs, "om_in_ev-g3")[0].reply_in_thread).toBe(true);
  });

  it("refuses a webhook without a verification secret at start, naming the keys", async () => {
    const fake = (fs = await startFeishuFake());
    await expect(startHarness(config(fake, [], []))).rejects.toThrow(/verification_token or encrypt_key is required/);
  });
});
