// Which config starts the channel runtime: any enabled platform section, alone (upstream's section as it ships,
// no `channel_connections`). A DingTalk-only config once started nothing and said nothing.
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { until } from "../support/wait.js";
import { captureLogs } from "../support/capture-logs.js";

let h: Harness | undefined;
let dt: DingTalkFake | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
afterEach(async () => {
  await h?.close();
  await dt?.close();
  logs?.restore();
  h = dt = logs = undefined;
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

  it("a misspelled key in an enabled platform section is named in a warning at start (a known one is not)", async () => {
    logs = captureLogs();
    const fake = (dt = await startDingTalkFake());
    h = await startHarness([
      "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s",
      "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, `    api_base: ${fake.url}`,
      "    mention_ony: true", "    allowed_users: []", "",
    ].join("\n"), { authDisabled: true });
    const warned = logs.lines().filter((l) => l.level === 40 && typeof l.key === "string").map((l) => l.key);
    expect(warned).toEqual(["channels.dingtalk.mention_ony"]);
    expect(logs.messages().join("\n")).toContain("channels.dingtalk.mention_ony is not a key this gateway reads");
  });
});
