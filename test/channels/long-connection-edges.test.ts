// Edges of the DingTalk long connection through the gateway: a message over `channels.max_message_chars` is
// answered "too long" and starts no run; and nothing secret (client_secret, access tokens, one-time stream tickets)
// reaches the logs, even at debug level, through a connection, a reply, a dropped stream and refused credentials.
import { afterEach, describe, expect, it } from "vitest";
import { captureLogs } from "../support/capture-logs.js";
import { startHarness, type Harness } from "../support/harness.js";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let dt: DingTalkFake | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
afterEach(async () => {
  await h?.close();
  await dt?.close();
  logs?.restore();
  h = dt = logs = undefined;
});

async function setup(extra: string[] = []): Promise<{ h: Harness; dt: DingTalkFake }> {
  const fake = (dt = await startDingTalkFake("ding-app", "S3CRET-ding-client-secret"));
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 5",
    "channels:", ...extra, "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, `    api_base: ${fake.url}`, "",
  ].join("\n"), { authDisabled: true });
  await until(() => fake.connections() === 1);
  return { h, dt: fake };
}

describe("DingTalk long connection edges", () => {
  it("a message over max_message_chars is answered 'too long' and starts no run", async () => {
    const { h, dt } = await setup(["  max_message_chars: 100"]);
    dt.push(dingtalkText("m-long", "staff-1", "x".repeat(5000)));
    await until(() => dt.sent.some((s) => s.chat === "staff-1"));
    expect(dt.sent.find((s) => s.chat === "staff-1")?.text).toBe("Your message is too long (5000 characters; the limit is 100). Please shorten it and send it again.");
    expect(await (await fetch(`${h.url}/api/threads/search`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()).toEqual([]);
  });

  it("no secret, token or ticket in the logs (debug level) through a reply, a dropped stream and refused credentials", async () => {
    logs = captureLogs();
    const { dt } = await setup();
    dt.push(dingtalkText("m-1", "staff-1", "hello"));
    await until(() => dt.sent.some((s) => s.chat === "staff-1"));
    dt.disconnect();
    await until(() => dt.accepted() === 2, 10_000);
    dt.revoke();
    dt.disconnect();
    await until(() => logs!.messages().some((m) => m.includes("refused for good")), 15_000);
    const all = JSON.stringify(logs.lines());
    expect(all).not.toContain(dt.clientSecret);
    expect(all).not.toMatch(/tok-\d+/);
    expect(all).not.toMatch(/ticket-\d+/);
  }, 30_000);
});
