// Measurements of the Feishu and Discord channels through the gateway and their fakes (printed, and bounded so a
// regression fails): inbound event -> first reply message / first edit (p50, p99), and platform API calls per
// 200-token answer at the shipped edit interval (1 s). Feishu events arrive encrypted over the webhook; Discord
// messages as Gateway dispatches.
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { encryptedEvent, feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { discordMessage, startDiscordFake, type DiscordFake } from "../support/fakes/discord.js";
import type { PlatformCall } from "../support/fakes/im-platform.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let fake: FeishuFake | DiscordFake | undefined;
afterEach(async () => {
  await h?.close();
  await fake?.close();
  h = fake = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];
const MODEL = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\n";

/** Sends 20 short DMs and one of 200 tokens through `send`; reads the answer with `answer`; prints and bounds. */
async function measure(name: string, p: { calls: PlatformCall[]; send: (id: string, text: string) => Promise<unknown>; answer: (id: string) => string | undefined; isCreate: (c: PlatformCall) => boolean; isEdit: (c: PlatformCall) => boolean }): Promise<void> {
  const firstReply: number[] = [];
  const firstEdit: number[] = [];
  for (let i = 0; i < 20; i++) {
    const from = p.calls.length;
    const t0 = Date.now();
    await p.send(`lat-${i}`, `ping ${i} a b c d e f g h`);
    await until(() => p.answer(`lat-${i}`) === `You said: ping ${i} a b c d e f g h`, 10_000, 5);
    const calls = p.calls.slice(from);
    firstReply.push(calls.find(p.isCreate)!.at - t0);
    const edit = calls.find(p.isEdit);
    if (edit) firstEdit.push(edit.at - t0);
  }
  const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
  const from = p.calls.length;
  await p.send("lat-long", words);
  await until(() => p.answer("lat-long") === `You said: ${words}`, 20_000);
  const calls = p.calls.slice(from);
  const span = calls.at(-1)!.at - calls[0].at;
  const perAnswer = { create: calls.filter(p.isCreate).length, edit: calls.filter(p.isEdit).length, all: calls.length };
  console.log(`[channels:${name}] inbound->first reply ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)}; inbound->first edit ms p50=${pct(firstEdit, 50)} p99=${pct(firstEdit, 99)} (n=${firstEdit.length}); API calls for a 200-token answer (${span} ms of streaming): ${JSON.stringify(perAnswer)}`);
  expect(pct(firstReply, 50)).toBeLessThan(2000);
  expect(perAnswer.create).toBe(1);
  expect(perAnswer.edit).toBeLessThanOrEqual(Math.ceil(span / 1000) + 2);
}

describe("Feishu and Discord channel measurements", () => {
  it("Feishu: inbound event -> first reply and API calls per 200-token answer", async () => {
    const fs = await startFeishuFake();
    fake = fs;
    h = await startHarness(`${MODEL}channels:\n  feishu:\n    enabled: true\n    app_id: ${fs.appId}\n    app_secret: ${fs.appSecret}\n    domain: ${fs.url}\n    mode: webhook\n    encrypt_key: k\nchannel_connections:\n  enabled: true\n  feishu:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    const code = (await (await alice.fetch("/api/channels/feishu/connect", { method: "POST" })).json()).code;
    const send = (id: string, text: string) => {
      const d = encryptedEvent("k", feishuText(id, "ou_a", text));
      return fetch(`${h!.url}/api/channels/webhooks/feishu`, { method: "POST", headers: d.headers, body: d.body });
    };
    await send("connect", `/connect ${code}`);
    await until(() => fs.sent.length === 1);
    await measure("feishu", {
      calls: fs.calls, send, answer: (id) => fs.sent.find((s) => s.reply_to === `om_in_${id}`)?.texts.at(-1),
      isCreate: (c) => c.method === "reply", isEdit: (c) => c.verb === "PATCH",
    });
  }, 120_000);

  it("Discord: inbound event -> first reply and API calls per 200-token answer", async () => {
    const dc = await startDiscordFake();
    fake = dc;
    h = await startHarness(`${MODEL}channels:\n  discord:\n    enabled: true\n    bot_token: ${dc.token}\n    api_base: ${dc.url}\nchannel_connections:\n  enabled: true\n  discord:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => dc.connections() === 1);
    const code = (await (await alice.fetch("/api/channels/discord/connect", { method: "POST" })).json()).code;
    const send = async (id: string, text: string) => dc.dispatch(discordMessage(id, "77", text));
    await send("connect", `/connect ${code}`);
    await until(() => dc.sent.length === 1);
    // Which message answers which: the n-th answer after the connect reply (DMs are not replies on Discord).
    const order: string[] = [];
    const sendTracked = async (id: string, text: string) => { order.push(id); await send(id, text); };
    await measure("discord", {
      calls: dc.calls, send: sendTracked, answer: (id) => dc.sent[1 + order.indexOf(id)]?.texts.at(-1),
      isCreate: (c) => c.verb === "POST", isEdit: (c) => c.verb === "PATCH",
    });
  }, 120_000);

  it("Discord thread_mode: server message -> thread started -> first reply in it, and API calls per 200-token answer", async () => {
    const dc = await startDiscordFake();
    fake = dc;
    h = await startHarness(`${MODEL}channels:\n  discord:\n    enabled: true\n    thread_mode: true\n    bot_token: ${dc.token}\n    api_base: ${dc.url}\nchannel_connections:\n  enabled: true\n  discord:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => dc.connections() === 1);
    const code = (await (await alice.fetch("/api/channels/discord/connect", { method: "POST" })).json()).code;
    dc.dispatch(discordMessage("connect", "78", `/connect ${code}`));
    await until(() => dc.sent.length === 1);
    // Each server message starts its own thread (its id is the message's): the answer is the one posted there.
    const send = async (id: string, text: string) => dc.dispatch(discordMessage(id, "78", text, { guildId: "g-1", channelId: "c-lat" }));
    const from = dc.calls.length;
    await measure("discord-thread-mode", {
      calls: dc.calls, send, answer: (id) => dc.sent.find((s) => s.channel_id === id)?.texts.at(-1),
      isCreate: (c) => c.verb === "POST" && c.method === "messages", isEdit: (c) => c.verb === "PATCH",
    });
    expect(dc.calls.slice(from).filter((c) => c.method === "threads")).toHaveLength(21);
  }, 120_000);
});
