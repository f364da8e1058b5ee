// Measurements of the Telegram channel over HTTP and the Bot API fake (printed, and bounded so a regression fails):
// inbound webhook event -> first reply message / first edit (p50, p99), and Bot API calls per 200-token answer
// with the shipped edit interval (1 s).
import { afterEach, describe, expect, it } from "vitest";
import { signUp } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let tg: TelegramFake | undefined;
afterEach(async () => {
  await h?.close();
  await tg?.close();
  h = tg = undefined;
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];

describe("Telegram channel measurements", () => {
  it("inbound event -> first reply and API calls per 200-token answer", async () => {
    tg = await startTelegramFake();
    h = await startHarness(`models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n    token_delay_ms: 10\nchannels:\n  telegram:\n    enabled: true\n    bot_token: "${tg.token}"\n    api_base: ${tg.url}\n    mode: webhook\n    webhook_secret: s3cret\nchannel_connections:\n  enabled: true\n  telegram:\n    enabled: true\n`, { authDisabled: false });
    const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
    const code = (await (await alice.fetch("/api/channels/telegram/connect", { method: "POST" })).json()).code;
    const deliver = (update: Record<string, unknown>) => fetch(`${h!.url}/api/channels/webhooks/telegram`, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "s3cret" }, body: JSON.stringify(update) });
    await deliver(tg.dm(42, `/start ${code}`));
    await until(() => tg!.sent.length === 1);

    const firstReply: number[] = [];
    const firstEdit: number[] = [];
    for (let i = 0; i < 20; i++) {
      const from = tg.calls.length;
      const t0 = Date.now();
      await deliver(tg.dm(42, `ping ${i} a b c d e f g h`));
      await until(() => tg!.sent.at(-1)!.texts.at(-1) === `You said: ping ${i} a b c d e f g h`, 10_000, 5);
      const calls = tg.calls.slice(from);
      firstReply.push(calls.find((c) => c.method === "sendMessage")!.at - t0);
      const edit = calls.find((c) => c.method === "editMessageText");
      if (edit) firstEdit.push(edit.at - t0);
    }

    const words = Array.from({ length: 198 }, (_, i) => `t${i}`).join(" ");
    const from = tg.calls.length;
    await deliver(tg.dm(42, words));
    await until(() => tg!.sent.at(-1)!.texts.at(-1) === `You said: ${words}`, 20_000);
    const calls = tg.calls.slice(from);
    const perAnswer = { sendMessage: calls.filter((c) => c.method === "sendMessage").length, editMessageText: calls.filter((c) => c.method === "editMessageText").length };
    console.log(`[channels] inbound->first reply message ms p50=${pct(firstReply, 50)} p99=${pct(firstReply, 99)}; inbound->first edit ms p50=${pct(firstEdit, 50)} p99=${pct(firstEdit, 99)} (n=${firstEdit.length}); Bot API calls for a 200-token answer (${calls.at(-1)!.at - calls[0].at} ms of streaming): ${JSON.stringify(perAnswer)}`);
    expect(pct(firstReply, 50)).toBeLessThan(2000);
    // One send, then at most one edit a second plus the final one.
    expect(perAnswer.sendMessage).toBe(1);
    expect(perAnswer.editMessageText).toBeLessThanOrEqual(Math.ceil((calls.at(-1)!.at - calls[0].at) / 1000) + 2);
  }, 120_000);
});
