// Measurements of the DingTalk channel through the gateway and its fake (printed, and bounded so a regression
// fails): Stream CALLBACK frame -> first robot message (p50, p99 of 20 DMs), and robot API calls for a 200-token
// answer. The scripted model writes 10 ms a token; the answer is sent once the run ends (no edits on DingTalk).
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

describe("DingTalk channel measurements", () => {
  it("inbound frame -> first reply, and robot API calls per 200-token answer", async () => {
    const fake = (dt = await startDingTalkFake());
    h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  dingtalk:\n    enabled: true\n    client_id: ${fake.clientId}\n    client_secret: ${fake.clientSecret}\n    api_base: ${fake.url}\nchannel_connections:\n  enabled: true\n  dingtalk:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => fake.connections() === 1);
    const code = (await (await alice.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json()).code;
    fake.push(dingtalkText("connect", "staff-l", `/connect ${code}`));
    await until(() => fake.sent.length === 1);
    const firstReply: number[] = [];
    for (let i = 0; i < 20; i++) {
      const from = fake.calls.length;
      const text = `ping ${i} a b c d e f g h`;
      const t0 = Date.now();
      fake.push(dingtalkText(`lat-${i}`, "staff-l", text));
      await until(() => fake.sent.at(-1)?.text === `You said: ${text}`, 10_000, 5);
      firstReply.push(fake.calls.slice(from).find((c) => c.method === "batchSend")!.at - t0);
    }
    const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
    const from = fake.calls.length;
    const t0 = Date.now();
    fake.push(dingtalkText("lat-long", "staff-l", words));
    await until(() => fake.sent.at(-1)?.text === `You said: ${words}`, 20_000);
    const calls = fake.calls.slice(from);
    const perAnswer = Object.fromEntries([...new Set(calls.map((c) => c.method))].map((m) => [m, calls.filter((c) => c.method === m).length]));
    console.log(`[channels:dingtalk] inbound->first reply ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)} (n=20); 200-token answer: ${calls.length} API calls ${JSON.stringify(perAnswer)}, sent ${calls.at(-1)!.at - t0} ms after the frame`);
    expect(pct(firstReply, 50)).toBeLessThan(3000);
    // One robot message, the token cached: nothing else.
    expect(perAnswer).toEqual({ batchSend: 1 });
  }, 120_000);
});
