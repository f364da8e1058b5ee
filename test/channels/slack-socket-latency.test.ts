// Measurement of Slack over Socket Mode through the gateway and the fake (printed, and bounded so a regression
// fails): envelope pushed -> ack, -> first reply message (chat.postMessage), -> first edit (chat.update), p50 / p99
// over 20 DMs, and Web API calls for a 200-token answer at the shipped edit interval (1.2 s, chat.update's tier).
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { socketDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let slack: SlackFake | undefined;
afterEach(async () => {
  await h?.close();
  await slack?.close();
  h = slack = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

describe("Slack Socket Mode measurements", () => {
  it("envelope -> ack, first reply and first edit; Web API calls per 200-token answer", async () => {
    const fake = (slack = await startSlackFake());
    h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  slack:\n    enabled: true\n    bot_token: ${fake.token}\n    app_token: ${fake.appToken}\n    api_base: ${fake.url}\nchannel_connections:\n  enabled: true\n  slack:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => fake.openSockets() === 1, 10_000);
    const code = (await (await alice.fetch("/api/channels/slack/connect", { method: "POST" })).json()).code;
    fake.pushEvent(socketDm("Ev-connect", "U7", `/connect ${code}`));
    await until(() => fake.sent.length === 1);
    const answer = (i: number) => fake.sent[1 + i]?.texts.at(-1);
    const ack: number[] = [];
    const firstReply: number[] = [];
    const firstEdit: number[] = [];
    for (let i = 0; i < 20; i++) {
      const from = fake.calls.length;
      const t0 = Date.now();
      const id = fake.pushEvent(socketDm(`Ev-lat-${i}`, "U7", `ping ${i} a b c d e f g h`));
      await until(() => answer(i) === `You said: ping ${i} a b c d e f g h`, 10_000, 5);
      ack.push(fake.acks.find((a) => a.envelope_id === id)!.at - t0);
      const calls = fake.calls.slice(from);
      firstReply.push(calls.find((c) => c.method === "chat.postMessage")!.at - t0);
      const edit = calls.find((c) => c.method === "chat.update");
      if (edit) firstEdit.push(edit.at - t0);
    }
    const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
    const from = fake.calls.length;
    fake.pushEvent(socketDm("Ev-long", "U7", words));
    await until(() => answer(20) === `You said: ${words}`, 20_000);
    const calls = fake.calls.slice(from);
    const span = calls.at(-1)!.at - calls[0].at;
    const perAnswer = { postMessage: calls.filter((c) => c.method === "chat.postMessage").length, update: calls.filter((c) => c.method === "chat.update").length, all: calls.length };
    console.log(`[channels:slack-socket] envelope->ack ms p50=${pct(ack, 50)} p99=${pct(ack, 99)}; ->first reply ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)}; ->first edit ms p50=${pct(firstEdit, 50)} p99=${pct(firstEdit, 99)} (n=${firstEdit.length}); Web API calls for a 200-token answer (${span} ms of streaming): ${JSON.stringify(perAnswer)}`);
    expect(pct(ack, 99)).toBeLessThan(3000);
    expect(pct(firstReply, 50)).toBeLessThan(2000);
    expect(perAnswer.postMessage).toBe(1);
    expect(perAnswer.update).toBeLessThanOrEqual(Math.ceil(span / 1200) + 2);
  }, 120_000);
});
