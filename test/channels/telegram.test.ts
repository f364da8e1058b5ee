// Telegram channel end to end: the gateway over HTTP (auth on, two users), the Bot API fake, webhook and long-poll
// modes. A DM from a connected user runs on that user's thread and the answer arrives by message edits.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { until } from "../support/wait.js";

const SECRET = "webhook-secret-123";
const PASSWORD = "correct horse battery";

function config(tg: TelegramFake, extra: { mode?: "webhook" | "polling"; tokenDelayMs?: number; telegram?: string } = {}): string {
  return [
    "models:",
    "  - name: s",
    "    use: deerflow-gateway:ScriptedChatModel",
    "    model: s",
    `    token_delay_ms: ${extra.tokenDelayMs ?? 5}`,
    "channels:",
    "  max_message_chars: 50000",
    "  telegram:",
    "    enabled: true",
    `    bot_token: "${tg.token}"`,
    `    api_base: ${tg.url}`,
    `    mode: ${extra.mode ?? "webhook"}`,
    `    webhook_secret: ${SECRET}`,
    "    polling_timeout: 1",
    "    stream_edit_interval_ms: 30",
    ...(extra.telegram ? [extra.telegram] : []),
    "channel_connections:",
    "  enabled: true",
    "  telegram:",
    "    enabled: true",
    "    bot_username: deerflow_test_bot",
    "",
  ].join("\n");
}

let h: Harness | undefined;
let tg: TelegramFake | undefined;
afterEach(async () => {
  await h?.close();
  await tg?.close();
  h = tg = undefined;
});

async function setup(extra: Parameters<typeof config>[1] = {}): Promise<{ h: Harness; tg: TelegramFake; alice: Session; bob: Session }> {
  tg = await startTelegramFake();
  h = await startHarness(config(tg, extra), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", PASSWORD, "initialize");
  const bob = await signUp(h.url, "bob@example.com", PASSWORD);
  return { h, tg, alice, bob };
}

/** Delivers an update to the webhook as Telegram does. */
function deliver(harness: Harness, update: Record<string, unknown>, secret: string | null = SECRET): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (secret !== null) headers["x-telegram-bot-api-secret-token"] = secret;
  return fetch(`${harness.url}/api/channels/webhooks/telegram`, { method: "POST", headers, body: JSON.stringify(update) });
}

/** Connects Telegram user `tgUser` to `session`'s account through a connect code, as the Settings tab does. */
async function connect(harness: Harness, fake: TelegramFake, session: Session, tgUser: number): Promise<void> {
  const res = await session.fetch("/api/channels/telegram/connect", { method: "POST" });
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(body).toMatchObject({ provider: "telegram", mode: "deep_link", expires_in: 600 });
  expect(body.url).toBe(`https://t.me/deerflow_test_bot?start=${body.code}`);
  const before = fake.sent.length;
  expect((await deliver(harness, fake.dm(tgUser, `/start ${body.code}`))).status).toBe(200);
  await until(() => fake.sent.length > before);
  expect(fake.sent.at(-1)!.texts[0]).toBe("Telegram connected to DeerFlow.");
}

const lastText = (fake: TelegramFake, chatId: number) => fake.sent.filter((s) => s.chat_id === String(chatId)).at(-1)?.texts.at(-1);

describe("Telegram channel", () => {
  it("answers a connected user's DM on that user's thread, streamed by message edits; the thread is in the user's list", async () => {
    const { h, tg, alice, bob } = await setup({ tokenDelayMs: 20 });
    await connect(h, tg, alice, 501);
    const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
    const before = tg.sent.length;
    expect((await deliver(h, tg.dm(501, text))).status).toBe(200);
    await until(() => lastText(tg, 501) === `You said: ${text}`, 15_000);
    const reply = tg.sent.slice(before).find((s) => s.chat_id === "501")!;
    // Streamed: the message was edited several times, each text a prefix of the final one.
    expect(reply.texts.length).toBeGreaterThan(2);
    for (const t of reply.texts) expect(`You said: ${text}`.startsWith(t.replace(/\s+$/, ""))).toBe(true);
    const edits = tg.calls.filter((c) => c.method === "editMessageText").length;
    expect(edits).toBe(reply.texts.length - 1);

    const mine = await (await alice.fetch("/api/threads/search", { json: { limit: 10 } })).json();
    expect(mine).toHaveLength(1);
    expect(mine[0].metadata.channel_source).toMatchObject({ type: "im_channel", provider: "telegram", chat_id: "501" });
    const state = await (await alice.fetch(`/api/threads/${mine[0].thread_id}/state`)).json();
    expect(JSON.stringify(state.values.messages)).toContain(`You said: ${text}`);
    // Bob sees none of it.
    expect(await (await bob.fetch("/api/threads/search", { json: { limit: 10 } })).json()).toEqual([]);
    expect((await bob.fetch(`/api/threads/${mine[0].thread_id}/state`)).status).toBe(404);
    const connections = await (await alice.fetch("/api/channels/connections")).json();
    expect(connections.connections).toEqual([expect.objectContaining({ provider: "telegram", status: "connected", external_account_id: "501" })]);
    expect(await (await bob.fetch("/api/channels/connections")).json()).toEqual({ connections: [] });
  });

  it("refuses a webhook with a bad or missing secret token (401, nothing started)", async () => {
    const { h, tg, alice } = await setup();
    await connect(h, tg, alice, 502);
    const calls = tg.calls.length;
    expect((await deliver(h, tg.dm(502, "hello"), null)).status).toBe(401);
    expect((await deliver(h, tg.dm(502, "hello"), "wrong-secret")).status).toBe(401);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);
    expect(tg.calls.length).toBe(calls);
  });

  it("runs an event delivered 5 times once", async () => {
    const { h, tg, alice } = await setup();
    await connect(h, tg, alice, 503);
    const update = tg.dm(503, "only once");
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(h, update)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await until(() => lastText(tg, 503) === "You said: only once", 10_000);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs).toHaveLength(1);
    expect(tg.calls.filter((c) => c.method === "sendMessage" && c.body.text !== "Telegram connected to DeerFlow.")).toHaveLength(1);
  });

  it("gives an unbound identity upstream's answer and starts nothing", async () => {
    const { h, tg, alice } = await setup();
    expect((await deliver(h, tg.dm(777, "hi"))).status).toBe(200);
    await until(() => lastText(tg, 777) !== undefined);
    expect(lastText(tg, 777)).toBe("Connect this channel from DeerFlow Settings, complete the in-channel connect step, then send your message again.");
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);
  });

  it("/new starts a new thread; /stop interrupts the running answer", async () => {
    const { h, tg, alice } = await setup({ tokenDelayMs: 100 });
    await connect(h, tg, alice, 504);
    await deliver(h, tg.dm(504, "first"));
    await until(() => lastText(tg, 504) === "You said: first", 10_000);
    await deliver(h, tg.dm(504, "/new"));
    await until(() => lastText(tg, 504) === "New conversation started.");
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
    await deliver(h, tg.dm(504, long));
    await until(() => (lastText(tg, 504) ?? "").startsWith("You said: w0 w1"), 10_000);
    await deliver(h, tg.dm(504, "/stop"));
    await until(() => lastText(tg, 504) === "Stopped.", 10_000);
    // The streamed message ends with the stop notice, short of the whole answer.
    const streamed = tg.sent.filter((s) => s.chat_id === "504" && s.texts.some((t) => t.startsWith("You said: w0")))[0];
    await until(() => (streamed.texts.at(-1) ?? "").endsWith("(stopped)"), 10_000);
    expect(streamed.texts.at(-1)).toMatch(/^You said: w0 .*\n\n\(stopped\)$/s);
    expect(streamed.texts.at(-1)).not.toContain(`w59`);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(2);
    const runs = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/runs`)).json();
    expect(runs[0].status).toBe("interrupted");
  }, 40_000);

  it("answers a 1 MB message with a limit notice and starts nothing", async () => {
    const { h, tg, alice } = await setup();
    await connect(h, tg, alice, 505);
    const res = await deliver(h, tg.dm(505, "x".repeat(1024 * 1024)));
    expect(res.status).toBe(200);
    await until(() => (lastText(tg, 505) ?? "").startsWith("Your message is too long"));
    expect(lastText(tg, 505)).toBe("Your message is too long (1048576 characters; the limit is 50000). Please shorten it and send it again.");
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);
  });

  it("retries a 429 from the Bot API after retry_after and still delivers the answer", async () => {
    const { h, tg, alice } = await setup();
    await connect(h, tg, alice, 506);
    tg.failNext.push(429);
    const started = tg.calls.length;
    await deliver(h, tg.dm(506, "after a 429"));
    await until(() => lastText(tg, 506) === "You said: after a 429", 10_000);
    const sends = tg.calls.slice(started).filter((c) => c.method === "sendMessage");
    // The first send was answered 429; the retry waited retry_after (1 s) and went through.
    expect(sends.length).toBe(2);
    expect(sends[1].at - sends[0].at).toBeGreaterThanOrEqual(950);
  });

  it("keeps two users' identities and threads apart", async () => {
    const { h, tg, alice, bob } = await setup();
    await connect(h, tg, alice, 601);
    await connect(h, tg, bob, 602);
    await deliver(h, tg.dm(601, "from alice"));
    await deliver(h, tg.dm(602, "from bob"));
    await until(() => lastText(tg, 601) === "You said: from alice" && lastText(tg, 602) === "You said: from bob", 10_000);
    const a = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    const b = await (await bob.fetch("/api/threads/search", { json: {} })).json();
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(JSON.stringify((await (await alice.fetch(`/api/threads/${a[0].thread_id}/state`)).json()).values.messages)).not.toContain("from bob");
    expect(JSON.stringify((await (await bob.fetch(`/api/threads/${b[0].thread_id}/state`)).json()).values.messages)).not.toContain("from alice");
    // Alice cannot remove Bob's connection.
    const bobConnection = (await (await bob.fetch("/api/channels/connections")).json()).connections[0];
    expect((await alice.fetch(`/api/channels/connections/${bobConnection.id}`, { method: "DELETE" })).status).toBe(404);
    expect((await bob.fetch(`/api/channels/connections/${bobConnection.id}`, { method: "DELETE" })).status).toBe(204);
    expect(await (await bob.fetch("/api/channels/connections")).json()).toEqual({ connections: [] });
  });

  it("long-polls getUpdates and answers the DM", async () => {
    const { tg, alice } = await setup({ mode: "polling" });
    const code = (await (await alice.fetch("/api/channels/telegram/connect", { method: "POST" })).json()).code;
    tg.pushUpdate(tg.dm(701, `/start ${code}`).message as Record<string, unknown>);
    await until(() => lastText(tg, 701) === "Telegram connected to DeerFlow.", 10_000);
    tg.pushUpdate(tg.dm(701, "polled").message as Record<string, unknown>);
    await until(() => lastText(tg, 701) === "You said: polled", 10_000);
  });
});
