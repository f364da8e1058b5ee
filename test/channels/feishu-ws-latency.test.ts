// Measurement of the Feishu long connection through the gateway and its fake (printed, and bounded so a regression
// fails), as platform-latency.test.ts does for the webhook: an event frame pushed on the socket -> the first card
// reply / the first PATCH (p50, p99 over 20 DMs), and Open Platform calls per 200-token answer at the shipped 1 s
// edit interval. The scripted model streams at 10 ms a token.
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { attachLongConnection, type FeishuLongConnectionFake } from "../support/fakes/feishu-ws.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let fs: FeishuFake | undefined;
let lc: FeishuLongConnectionFake | undefined;
afterEach(async () => {
  await h?.close();
  await lc?.close();
  await fs?.close();
  h = fs = lc = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

describe("Feishu long connection measurements", () => {
  it("inbound event frame -> first reply and first edit; API calls per 200-token answer", async () => {
    const fake = (fs = await startFeishuFake("cli_a1b2c3d4e5f60718", "secret"));
    const conn = (lc = await attachLongConnection(fake, { pingIntervalS: 120 }));
    h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  feishu:\n    enabled: true\n    app_id: ${fake.appId}\n    app_secret: ${fake.appSecret}\n    domain: ${fake.url}\nchannel_connections:\n  enabled: true\n  feishu:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => conn.connections() === 1, 15_000);
    const code = (await (await alice.fetch("/api/channels/feishu/connect", { method: "POST" })).json()).code;
    conn.push(feishuText("connect", "ou_a", `/connect ${code}`));
    await until(() => fake.sent.length === 1);
    const answer = (id: string) => fake.sent.find((s) => s.reply_to === `om_in_${id}`)?.texts.at(-1);

    const firstReply: number[] = [];
    const firstEdit: number[] = [];
    for (let i = 0; i < 20; i++) {
      const from = fake.calls.length;
      const t0 = Date.now();
      conn.push(feishuText(`lat-${i}`, "ou_a", `ping ${i} a b c d e f g h`));
      await until(() => answer(`lat-${i}`) === `You said: ping ${i} a b c d e f g h`, 10_000, 5);
      const calls = fake.calls.slice(from);
      firstReply.push(calls.find((c) => c.method === "reply")!.at - t0);
      const edit = calls.find((c) => c.verb === "PATCH");
      if (edit) firstEdit.push(edit.at - t0);
    }
    const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
    const from = fake.calls.length;
    conn.push(feishuText("lat-long", "ou_a", words));
    await until(() => answer("lat-long") === `You said: ${words}`, 20_000);
    const calls = fake.calls.slice(from);
    const span = calls.at(-1)!.at - calls[0].at;
    const perAnswer = { reply: calls.filter((c) => c.method === "reply").length, patch: calls.filter((c) => c.verb === "PATCH").length, all: calls.length };
    console.log(`[channels:feishu-ws] inbound->first reply ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)}; inbound->first edit ms p50=${pct(firstEdit, 50)} p99=${pct(firstEdit, 99)} (n=${firstEdit.length}); API calls for a 200-token answer (${span} ms of streaming): ${JSON.stringify(perAnswer)}`);
    expect(pct(firstReply, 50)).toBeLessThan(2000);
    expect(perAnswer.reply).toBe(1);
    expect(perAnswer.patch).toBeLessThanOrEqual(Math.ceil(span / 1000) + 2);
  }, 120_000);
});
