// Measurements of the WeCom channel through the gateway and its long-connection fake (printed, and bounded so a
// regression fails), as platform-latency.test.ts does for Feishu and Discord: inbound aibot_msg_callback -> first
// stream frame / first update frame (p50, p99 over 20 DMs), and reply frames for a 200-token answer at the shipped
// stream interval (500 ms).
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startWecomFake, wecomMessage, type WecomFake } from "../support/fakes/wecom.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let wc: WecomFake | undefined;
afterEach(async () => {
  await h?.close();
  await wc?.close();
  h = wc = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

describe("WeCom channel measurements", () => {
  it("inbound message -> first stream frame and frames per 200-token answer", async () => {
    const fake = (wc = await startWecomFake());
    h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  wecom:\n    enabled: true\n    bot_id: ${fake.botId}\n    bot_secret: ${fake.secret}\n    ws_url: ${fake.url}\nchannel_connections:\n  enabled: true\n  wecom:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    await until(() => fake.connections() === 1);
    const code = (await (await alice.fetch("/api/channels/wecom/connect", { method: "POST" })).json()).code;
    fake.deliver(wecomMessage("connect", "u-lat", `/connect ${code}`));
    await until(() => fake.streams.length === 1);
    const replies = (reqId: string) => fake.calls.filter((c) => c.cmd === "aibot_respond_msg" && c.reqId === reqId);
    const answer = (reqId: string) => fake.streams.find((s) => s.reqId === reqId && s.finished)?.texts.at(-1);

    const firstFrame: number[] = [];
    const firstUpdate: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      const reqId = fake.deliver(wecomMessage(`lat-${i}`, "u-lat", `ping ${i} a b c d e f g h`));
      await until(() => answer(reqId) === `You said: ping ${i} a b c d e f g h`, 10_000, 5);
      const frames = replies(reqId);
      firstFrame.push(frames[0].at - t0);
      if (frames.length > 1) firstUpdate.push(frames[1].at - t0);
    }
    const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
    const reqId = fake.deliver(wecomMessage("lat-long", "u-lat", words));
    await until(() => answer(reqId) === `You said: ${words}`, 20_000);
    const frames = replies(reqId);
    const span = frames.at(-1)!.at - frames[0].at;
    console.log(`[channels:wecom] inbound->first stream frame ms p50=${pct(firstFrame, 50)} p99=${pct(firstFrame, 99)}; inbound->first update ms p50=${pct(firstUpdate, 50)} p99=${pct(firstUpdate, 99)} (n=${firstUpdate.length}); reply frames for a 200-token answer (${span} ms of streaming): ${frames.length} (${frames.filter((f) => f.body.stream.finish).length} finished)`);
    expect(pct(firstFrame, 50)).toBeLessThan(2000);
    expect(new Set(frames.map((f) => f.body.stream.id)).size).toBe(1);
    expect(frames.length).toBeLessThanOrEqual(Math.ceil(span / 500) + 3);
  }, 120_000);
});
