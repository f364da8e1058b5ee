// Measurements of the DingTalk channel through the gateway and its fake (printed, and bounded so a regression
// fails): Stream CALLBACK frame -> first robot message (p50, p99 of 20 DMs), and robot API calls for a 200-token
// answer. The scripted model writes 10 ms a token. Without a card the answer is one message at the run's end; with
// `card_template_id` it streams into an AI Card (created, then updated at the default 1 s interval).
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let dt: DingTalkFake | undefined;
afterEach(async () => {
  await h?.close();
  await dt?.close();
  h = dt = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

async function start(card: boolean): Promise<DingTalkFake> {
  const fake = (dt = await startDingTalkFake());
  h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  dingtalk:\n    enabled: true\n    client_id: ${fake.clientId}\n    client_secret: ${fake.clientSecret}\n    api_base: ${fake.url}\n${card ? "    card_template_id: tpl\n" : ""}channel_connections:\n  enabled: true\n  dingtalk:\n    enabled: true\n`, { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.connections() === 1);
  const code = (await (await alice.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json()).code;
  fake.push(dingtalkText("connect", "staff-l", `/connect ${code}`));
  await until(() => fake.sent.length === 1);
  return fake;
}

/** 20 short DMs, then one of 200 tokens; `answer` reads the latest answer's text, `create` / `edit` pick its calls. */
async function measure(name: string, fake: DingTalkFake, answer: () => string | undefined, create: string, edit: string | null): Promise<Record<string, number>> {
  const firstReply: number[] = [];
  const firstEdit: number[] = [];
  for (let i = 0; i < 20; i++) {
    const from = fake.calls.length;
    const text = `ping ${i} a b c d e f g h`;
    const t0 = Date.now();
    fake.push(dingtalkText(`lat-${i}`, "staff-l", text));
    await until(() => answer() === `You said: ${text}`, 10_000, 5);
    const calls = fake.calls.slice(from);
    firstReply.push(calls.find((c) => c.method === create)!.at - t0);
    const e = edit ? calls.find((c) => c.method === edit) : undefined;
    if (e) firstEdit.push(e.at - t0);
  }
  const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
  const from = fake.calls.length;
  const t0 = Date.now();
  fake.push(dingtalkText("lat-long", "staff-l", words));
  await until(() => answer() === `You said: ${words}`, 20_000);
  const calls = fake.calls.slice(from);
  const perAnswer = Object.fromEntries([...new Set(calls.map((c) => c.method))].map((m) => [m, calls.filter((c) => c.method === m).length]));
  const edits = firstEdit.length ? `; inbound->first edit ms p50=${pct(firstEdit, 50)} p99=${pct(firstEdit, 99)} (n=${firstEdit.length})` : "";
  console.log(`[channels:${name}] inbound->first reply ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)} (n=20)${edits}; 200-token answer: ${calls.length} API calls ${JSON.stringify(perAnswer)}, last ${calls.at(-1)!.at - t0} ms after the frame`);
  expect(pct(firstReply, 50)).toBeLessThan(3000);
  return perAnswer;
}

describe("DingTalk channel measurements", () => {
  it("Markdown replies: inbound frame -> the answer, and robot API calls per 200-token answer", async () => {
    const fake = await start(false);
    const perAnswer = await measure("dingtalk", fake, () => fake.sent.at(-1)?.text, "batchSend", null);
    // One robot message, the token cached: nothing else.
    expect(perAnswer).toEqual({ batchSend: 1 });
  }, 120_000);

  it("AI Card: inbound frame -> card created / first streaming update, and API calls per 200-token answer", async () => {
    const fake = await start(true);
    const perAnswer = await measure("dingtalk-card", fake, () => { const c = fake.cards.at(-1); return c?.finalized ? c.contents.at(-1) : undefined; }, "createAndDeliver", "streaming");
    expect(perAnswer.createAndDeliver).toBe(1);
    // ~2.3 s of tokens at one update a second, plus the finalizing one.
    expect(perAnswer.streaming).toBeLessThanOrEqual(5);
  }, 120_000);
});
