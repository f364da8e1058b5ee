// Slack files and clarifications end to end: signed Events API deliveries, the Web API fake speaking private file
// downloads and the external upload flow. A shared file becomes a thread upload the agent reads, a presented output
// is uploaded back with the right bytes, a 100 MB file is refused unread, and a clarification asked in a channel
// thread is answered there by the user's next message, even one posted at the channel's top level.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { signedEvent, slackDm, startSlackFake, type SlackFake } from "../support/fakes/slack.js";
import { until } from "../support/wait.js";

const SIGNING_SECRET = "slack-signing-secret-files";
const BUSY = "This conversation is already processing another request. Please wait for it to finish and try again.";

let h: Harness | undefined;
let slack: SlackFake | undefined;
afterEach(async () => {
  await h?.close();
  await slack?.close();
  h = slack = undefined;
});

function post(harness: Harness, payload: Record<string, unknown>): Promise<Response> {
  const delivery = signedEvent(SIGNING_SECRET, payload);
  return fetch(`${harness.url}/api/channels/webhooks/slack`, { method: "POST", headers: delivery.headers, body: delivery.body });
}

/** A harness with alice connected as Slack user `user` of team T1. */
async function setup(user: string): Promise<{ h: Harness; slack: SlackFake; alice: Session }> {
  slack = await startSlackFake();
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 1",
    "tools:",
    "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }",
    "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:", "  slack:", "    enabled: true", `    bot_token: ${slack.token}`, `    signing_secret: ${SIGNING_SECRET}`, `    api_base: ${slack.url}`,
    "    stream_edit_interval_ms: 30", "    mention_only: true",
    "channel_connections:", "  enabled: true", "  slack:", "    enabled: true", "",
  ].join("\n"), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const code = (await (await alice.fetch("/api/channels/slack/connect", { method: "POST" })).json()).code;
  await post(h, slackDm(`Ev-connect-${user}`, user, `/connect ${code}`));
  await until(() => slack!.sent.some((s) => s.texts[0] === "Slack connected to DeerFlow."));
  return { h, slack, alice };
}

let events = 0;
/** A DM event from `user`, optionally sharing files (`subtype: file_share`, as Slack sends it). */
function dm(user: string, text: string, files?: Record<string, unknown>[]): Record<string, unknown> {
  const payload = slackDm(`Ev-${++events}-${Date.now()}`, user, text) as { event: Record<string, unknown> };
  if (files) Object.assign(payload.event, { subtype: "file_share", files });
  return payload;
}

const lastText = (fake: SlackFake, channel: string) => fake.sent.filter((s) => s.channel === channel).at(-1)?.texts.at(-1) ?? "";

/** Posts a DM once the conversation takes it (the previous run's worker may still be finishing). */
async function sendWhenFree(harness: Harness, fake: SlackFake, payload: () => Record<string, unknown>): Promise<void> {
  for (;;) {
    const before = fake.calls.filter((c) => c.method === "chat.postMessage").length;
    await post(harness, payload());
    await until(() => fake.calls.filter((c) => c.method === "chat.postMessage").length > before, 15_000);
    if (fake.calls.filter((c) => c.method === "chat.postMessage")[before].body.text !== BUSY) return;
  }
}

describe("Slack files and clarifications", () => {
  it("round-trips a file: a shared file becomes an upload the agent reads; the presented output is uploaded back", async () => {
    const { h, slack, alice } = await setup("U1");
    const file = slack.addFile("data.csv", Buffer.from("city,temp\nParis,21\n"));
    await post(h, dm("U1", '!call read_file {"description":"read","path":"/mnt/user-data/uploads/data.csv"}', [file]));
    await until(() => lastText(slack, "DU1").includes("Paris,21"), 15_000);
    // The download carried the bot token.
    const download = slack.calls.find((c) => c.httpMethod === "GET")!;
    expect(download.headers.authorization).toBe(`Bearer ${slack.token}`);
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect((await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json()).files).toEqual([expect.objectContaining({ filename: "data.csv", size: 19 })]);

    const bytes = "# Summary\nParis is 21 degrees.\n";
    await sendWhenFree(h, slack, () => dm("U1", `!call write_file ${JSON.stringify({ description: "w", path: "/mnt/user-data/outputs/summary.md", content: bytes })}`));
    await until(() => lastText(slack, "DU1") === "Tool write_file returned: OK", 15_000);
    await sendWhenFree(h, slack, () => dm("U1", '!call present_files {"filepaths":["/mnt/user-data/outputs/summary.md"]}'));
    await until(() => slack.shared.length === 1, 15_000);
    expect(slack.shared[0]).toMatchObject({ channel: "DU1", filename: "summary.md" });
    expect(slack.shared[0].data.toString("utf8")).toBe(bytes);
    expect(slack.calls.map((c) => c.method).filter((m) => m.startsWith("files."))).toEqual(["files.getUploadURLExternal", "files.completeUploadExternal"]);
  }, 40_000);

  it("refuses a 100 MB file from its declared size: a message in the chat, no download, nothing created", async () => {
    const { h, slack, alice } = await setup("U2");
    const file = slack.addFile("huge.bin", Buffer.from("tiny"), 100 * 1024 * 1024 + 1);
    await post(h, dm("U2", "look at this", [file]));
    await until(() => lastText(slack, "DU2").startsWith("The file huge.bin is too large"));
    expect(slack.calls.filter((c) => c.httpMethod === "GET")).toEqual([]);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);
  });

  it("answers a clarification asked in a channel thread with the user's next message, in that thread and on that gateway thread", async () => {
    const { h, slack, alice } = await setup("U3");
    const channelMessage = (id: string, ts: string, text: string) => ({ type: "event_callback", team_id: "T1", event_id: id, event: { type: "app_mention", channel: "C1", channel_type: "channel", user: "U3", text: `<@UBOT> ${text}`, ts } });
    await post(h, channelMessage("Ev-q", "1700000100.000100", '!call ask_clarification {"question":"Which quarter?"}'));
    await until(() => lastText(slack, "C1").includes("Which quarter?"), 15_000);
    expect(slack.sent.find((s) => s.channel === "C1")!.thread_ts).toBe("1700000100.000100");
    // The answer is a new top-level message (its own ts): it still answers the open question.
    await sendWhenFree(h, slack, () => channelMessage(`Ev-a-${Date.now()}`, `1700000200.${Date.now() % 1_000_000}`, "Q3"));
    await until(() => lastText(slack, "C1") === "You said: Q3", 15_000);
    const answer = slack.sent.filter((s) => s.channel === "C1").at(-1)!;
    expect(answer.thread_ts).toBe("1700000100.000100");
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    const state = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/state`)).json();
    expect(state.values.messages.map((m: { type: string }) => m.type)).toEqual(["human", "ai", "tool", "human", "ai"]);
  }, 30_000);
});
