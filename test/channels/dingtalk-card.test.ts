// DingTalk AI Card streaming (`card_template_id`): a run's answer is created as a card in the user's robot chat (or
// the group) and streamed into it by full-content updates at most every `stream_edit_interval_ms`, the last one
// marked finished; one-off replies (connect, commands) stay Markdown messages.
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

/** A gateway with AI Cards at `intervalMs`, and staff-c connected. */
async function start(intervalMs: number): Promise<DingTalkFake> {
  const fake = (dt = await startDingTalkFake());
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 20",
    "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, "    card_template_id: tpl-ai.schema", `    api_base: ${fake.url}`, `    stream_edit_interval_ms: ${intervalMs}`,
    "channel_connections:", "  enabled: true", "  dingtalk:", "    enabled: true", "",
  ].join("\n"), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.connections() === 1);
  const code = (await (await alice.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json()).code;
  fake.push(dingtalkText("m-c", "staff-c", `/connect ${code}`));
  await until(() => fake.sent.at(-1)?.text === "DingTalk connected to DeerFlow.");
  return fake;
}

describe("DingTalk AI Card streaming", () => {
  it("streams a DM's answer into one card, throttled, finalized; a group's card goes to the group; commands stay messages", async () => {
    const fake = await start(200);

    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    fake.push(dingtalkText("m-1", "staff-c", words));
    await until(() => fake.cards[0]?.finalized === true, 10_000);
    const card = fake.cards[0];
    expect(card).toMatchObject({ templateId: "tpl-ai.schema", openSpaceId: "dtv1.card//IM_ROBOT.staff-c" });
    expect(card.contents.at(-1)).toBe(`You said: ${words}`);
    // It grew in place: several partial contents before the final one, each a prefix of the answer.
    expect(card.contents.length).toBeGreaterThan(2);
    for (const c of card.contents) expect(`You said: ${words}`.startsWith(c)).toBe(true);
    const gaps = card.updates.slice(1, -1).map((t, i) => t - card.updates[i]);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(190);
    expect(fake.cards).toHaveLength(1);

    fake.push(dingtalkText("m-help", "staff-c", "/help"));
    await until(() => (fake.sent.at(-1)?.text ?? "").startsWith("Available commands:"));
    expect(fake.cards).toHaveLength(1);

    fake.push(dingtalkText("m-g", "staff-c", "in the group", { group: "cid-team" }));
    await until(() => fake.cards[1]?.finalized === true, 10_000);
    expect(fake.cards[1]).toMatchObject({ openSpaceId: "dtv1.card//IM_GROUP.cid-team" });
    expect(fake.cards[1].contents.at(-1)).toBe("You said: in the group");
  }, 30_000);

  it("finalizes a card whose streamed text is already the whole answer (no edit interval)", async () => {
    const fake = await start(0);
    fake.push(dingtalkText("m-2", "staff-c", "every token shown"));
    await until(() => fake.cards[0]?.finalized === true, 10_000);
    // The last streamed update already showed the answer; the end writes it once more, marked finished.
    expect(fake.cards[0].contents.slice(-2)).toEqual(["You said: every token shown", "You said: every token shown"]);
  }, 30_000);
});
