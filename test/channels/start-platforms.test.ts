// Which config starts the channel runtime: any enabled platform section, alone (upstream's section as it ships,
// no `channel_connections`). A DingTalk-only config once started nothing and said nothing.
import { afterEach, describe, expect, it } from "vitest";
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

describe("channel start", () => {
  it("a config enabling only DingTalk (no channel_connections) opens its stream and answers", async () => {
    const fake = (dt = await startDingTalkFake());
    h = await startHarness([
      "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 5",
      "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, `    api_base: ${fake.url}`, "",
    ].join("\n"), { authDisabled: true });
    await until(() => fake.connections() === 1);
    fake.push(dingtalkText("m-1", "staff-1", "hello alone"));
    await until(() => fake.sent.some((s) => s.chat === "staff-1"));
    expect(fake.sent.find((s) => s.chat === "staff-1")?.text).toContain("hello alone");
  });
});
