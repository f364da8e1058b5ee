// Malformed and hostile frames from a platform's long connection (DingTalk Stream, the Discord Gateway, Slack Socket
// Mode): a frame that is JSON but not an object, a payload of the wrong shape, fields of the wrong type. None may
// throw out of a socket handler (an uncaught exception or rejection there ends the gateway process); each is
// ignored, and the next good message is still answered.
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { dingtalkText, startDingTalkFake, type DingTalkFake } from "../support/fakes/dingtalk.js";
import { discordMessage, startDiscordFake, type DiscordFake } from "../support/fakes/discord.js";
import { socketDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { feishuMessage, feishuText, startFeishuFake } from "../support/fakes/feishu.js";
import { attachLongConnection } from "../support/fakes/feishu-ws.js";
import { until } from "../support/wait.js";

const MODEL = ["models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 5"];

let h: Harness | undefined;
const fakes: { close(): Promise<void> }[] = [];
/** Errors thrown out of a socket handler: Node would end the process on each. */
const escaped: unknown[] = [];
const onEscape = (err: unknown) => escaped.push(err);
afterEach(async () => {
  process.off("uncaughtException", onEscape);
  process.off("unhandledRejection", onEscape);
  await h?.close();
  for (const f of fakes.splice(0)) await f.close();
  h = undefined;
});

function watchEscapes(): void {
  escaped.length = 0;
  process.on("uncaughtException", onEscape);
  process.on("unhandledRejection", onEscape);
}

describe("hostile frames on the long connections", () => {
  it("DingTalk: a null frame, a null payload, rich text that is not a list are ignored; the next message is answered", async () => {
    const dt: DingTalkFake = await startDingTalkFake();
    fakes.push(dt);
    h = await startHarness([...MODEL, "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${dt.clientId}`, `    client_secret: ${dt.clientSecret}`, `    api_base: ${dt.url}`, ""].join("\n"), { authDisabled: true });
    await until(() => dt.connections() === 1);
    watchEscapes();
    dt.pushRaw("null");
    dt.pushRaw("42");
    dt.pushRaw(JSON.stringify({ type: "CALLBACK", headers: { topic: "/v1.0/im/bot/messages/get", messageId: "f-null" }, data: "null" }));
    dt.pushRaw(JSON.stringify({ type: "CALLBACK", headers: { topic: "/v1.0/im/bot/messages/get", messageId: "f-rich" }, data: JSON.stringify({ msgId: "m-rich", msgtype: "richText", senderStaffId: "staff-1", content: { richText: "not a list" } }) }));
    dt.pushRaw(JSON.stringify({ type: "CALLBACK", headers: { topic: "/v1.0/im/bot/messages/get", messageId: "f-text" }, data: JSON.stringify({ msgId: "m-text", msgtype: "text", senderStaffId: { id: 1 }, text: null }) }));
    // The unreadable callbacks are still acknowledged (a redelivery would be as unreadable).
    await until(() => dt.acks.has("f-null") && dt.acks.has("f-rich") && dt.acks.has("f-text"));
    dt.push(dingtalkText("m-ok", "staff-2", "still here"));
    await until(() => dt.sent.some((s) => s.chat === "staff-2" && s.text.includes("still here")));
    expect(dt.sent.filter((s) => s.chat === "staff-1")).toEqual([]);
    expect(escaped).toEqual([]);
  });

  it("Discord: a null frame, a null dispatch payload, an author that is not an object are ignored; the next DM is answered", async () => {
    const dc: DiscordFake = await startDiscordFake();
    fakes.push(dc);
    h = await startHarness([...MODEL, "channels:", "  discord:", "    enabled: true", `    bot_token: ${dc.token}`, `    api_base: ${dc.url}`, ""].join("\n"), { authDisabled: true });
    await until(() => dc.connections() === 1);
    watchEscapes();
    dc.pushRaw("null");
    dc.pushRaw("[]");
    dc.pushRaw(JSON.stringify({ op: 0, s: 900, t: "MESSAGE_CREATE", d: null }));
    dc.pushRaw(JSON.stringify({ op: 0, s: 901, t: "MESSAGE_CREATE", d: { id: "x1", channel_id: "dm-7", content: 5, author: "7", attachments: "none", mentions: 3 } }));
    dc.pushRaw(JSON.stringify({ op: 0, s: 902, t: "THREAD_CREATE", d: "thread" }));
    dc.pushRaw(JSON.stringify({ op: 0, s: 903, t: "GUILD_CREATE", d: { id: "g", threads: "many" } }));
    dc.dispatch(discordMessage("m-ok", "8", "still here"));
    await until(() => dc.sent.some((s) => s.channel_id === "dm-8" && s.texts.some((t) => t.includes("still here"))));
    expect(dc.sent.filter((s) => s.channel_id === "dm-7")).toEqual([]);
    expect(escaped).toEqual([]);
  });

  it("Slack Socket Mode: events whose text, files or user have the wrong type are acked and ignored; the next DM is answered", async () => {
    const slack: SlackFake = await startSlackFake();
    fakes.push(slack);
    h = await startHarness([...MODEL, "channels:", "  slack:", "    enabled: true", `    bot_token: ${slack.token}`, `    app_token: ${slack.appToken}`, `    api_base: ${slack.url}`, "    stream_edit_interval_ms: 30", ""].join("\n"), { authDisabled: true });
    await until(() => slack.openSockets() === 1, 10_000);
    watchEscapes();
    const bad = (eventId: string, event: Record<string, unknown>) => slack.pushEvent({ ...socketDm(eventId, "U7", "x"), event: { ...(socketDm(eventId, "U7", "x").event as object), ...event } });
    const ids = [
      bad("Ev-text", { text: 42 }),
      bad("Ev-files", { subtype: "file_share", files: "nope", text: "files?" }),
      bad("Ev-file-entry", { subtype: "file_share", files: [null, 7], text: "files?" }),
      bad("Ev-user", { user: { id: "U7" } }),
      // (`event: null` itself is out of reach: @slack/socket-mode reads `payload.event.type` before any handler.)
      slack.pushEvent({ ...socketDm("Ev-str", "U7", "x"), event: { type: "message", channel: ["D1"], user: "U7", text: "x" }, authorizations: [null] }),
    ];
    await until(() => ids.every((id) => slack.acks.some((a) => a.envelope_id === id)));
    slack.pushEvent(socketDm("Ev-ok", "U8", "still here"));
    await until(() => slack.sent.some((s) => s.channel === "DU8" && s.texts.some((t) => t.includes("still here"))));
    expect(escaped).toEqual([]);
  });
  it("Feishu long connection: message content that is JSON null or mentions that are not a list are acked 200 and ignored; the next DM is answered", async () => {
    const fs = await startFeishuFake("cli_a1b2c3d4e5f60718", "feishu-app-secret");
    fakes.push(fs);
    const lc = await attachLongConnection(fs);
    fakes.push(lc);
    h = await startHarness([...MODEL, "channels:", "  feishu:", "    enabled: true", `    app_id: ${fs.appId}`, `    app_secret: ${fs.appSecret}`, `    domain: ${fs.url}`, "    stream_edit_interval_ms: 30", ""].join("\n"), { authDisabled: true });
    await until(() => lc.connections() === 1, 15_000);
    watchEscapes();
    const nullContent = feishuMessage("ev-null", "ou_7", "text", {});
    ((nullContent.event as any).message).content = "null";
    const badMentions = feishuText("ev-mentions", "ou_7", "hi");
    ((badMentions.event as any).message).mentions = 5;
    // A 500 ack makes Feishu deliver the event again, as unreadable as before.
    const frames = [lc.push(nullContent), lc.push(badMentions)];
    await until(() => frames.every((id) => lc.acks.some((a) => a.messageId === id)), 10_000);
    expect(frames.map((id) => lc.acks.find((a) => a.messageId === id)?.code)).toEqual([200, 200]);
    lc.push(feishuText("ev-ok", "ou_8", "still here"));
    await until(() => JSON.stringify(fs.sent).includes("still here"), 15_000);
    expect(escaped).toEqual([]);
  }, 40_000);
});
