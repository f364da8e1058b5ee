// A WeCom long connection that drops while an answer streams over it: the answer must still arrive in full once the
// SDK has reconnected (the stream finished, or the text sent as a new message), and the run is not lost.
import { afterEach, describe, expect, it } from "vitest";
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

describe("WeCom connection dropped mid-answer", () => {
  it("delivers the whole answer after the reconnect", async () => {
    const fake = (wc = await startWecomFake());
    h = await startHarness([
      "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 40",
      "channels:", "  wecom:", "    enabled: true", `    bot_id: ${fake.botId}`, `    bot_secret: ${fake.secret}`, `    ws_url: ${fake.url}`, "",
    ].join("\n"), { authDisabled: true });
    await until(() => fake.connections() === 1);
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    const reqId = fake.deliver(wecomMessage("m-drop", "u-1", words));
    await until(() => fake.streams.some((s) => s.reqId === reqId));
    fake.drop();
    const expected = `You said: ${words}`;
    const arrived = () => fake.streams.some((s) => s.reqId === reqId && s.finished && s.texts.at(-1) === expected) || fake.proactive.some((p) => p.chatid === "u-1" && p.content === expected);
    await until(arrived, 20_000);
    const runs = await (await fetch(`${h.url}/api/threads/search`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json();
    expect(runs).toHaveLength(1);
  }, 40_000);
});
