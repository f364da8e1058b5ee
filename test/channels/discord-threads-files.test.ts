// Discord thread_mode and files end to end: the gateway over HTTP (auth on) with the Discord fake. A server message
// starts a thread from itself and the answer goes there; a message in that thread continues the same gateway thread;
// a refused thread start falls back to a channel reply. An attachment becomes an upload the agent reads; a presented
// output is posted as multipart `files[0]`; an oversized or off-CDN attachment is refused before any download.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { discordMessage, startDiscordFake, type DiscordFake } from "../support/fakes/discord.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let dc: DiscordFake | undefined;
afterEach(async () => {
  await h?.close();
  await dc?.close();
  h = dc = undefined;
});

function config(fake: DiscordFake, extra: string[]): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 1",
    "tools:",
    "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }",
    "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:", "  discord:", "    enabled: true", `    bot_token: ${fake.token}`, `    api_base: ${fake.url}`, "    stream_edit_interval_ms: 30", ...extra,
    "channel_connections:", "  enabled: true", "  discord:", "    enabled: true", "",
  ].join("\n");
}

/** A harness with alice connected (by DM) as Discord user `userId`. */
async function setup(userId: string, extra: string[] = []): Promise<{ h: Harness; dc: DiscordFake; alice: Session }> {
  const fake = (dc = await startDiscordFake());
  h = await startHarness(config(fake, extra), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.connections() === 1);
  const { code } = await (await alice.fetch("/api/channels/discord/connect", { method: "POST" })).json();
  fake.dispatch(discordMessage(`m-connect-${userId}`, userId, `/connect ${code}`));
  await until(() => lastText(fake, `dm-${userId}`) === "Discord connected to DeerFlow.");
  return { h, dc: fake, alice };
}

const repliesIn = (fake: DiscordFake, channel: string) => fake.sent.filter((s) => s.channel_id === channel);
const lastText = (fake: DiscordFake, channel: string) => repliesIn(fake, channel).at(-1)?.texts.at(-1) ?? "";
const threadStarts = (fake: DiscordFake) => fake.calls.filter((c) => c.verb === "POST" && c.method === "threads");
const BUSY = "This conversation is already processing another request. Please wait for it to finish and try again.";

/** Sends once the conversation takes it (the previous run's worker may still be finishing after its answer). */
async function sendWhenFree(fake: DiscordFake, channel: string, message: () => Record<string, unknown>): Promise<void> {
  for (;;) {
    const before = repliesIn(fake, channel).length;
    fake.dispatch(message());
    await until(() => repliesIn(fake, channel).length > before, 15_000);
    if (repliesIn(fake, channel)[before].texts[0] !== BUSY) return;
  }
}

describe("Discord thread_mode", () => {
  it("starts a thread from a server message, answers in it, and continues the same gateway thread from messages in it", async () => {
    const { dc, alice } = await setup("501", ["    thread_mode: true"]);
    // Delivered five times (a RESUME replay, a second gateway): one run, one thread.
    for (let i = 0; i < 5; i++) dc.dispatch(discordMessage("m-t1", "501", "first question", { guildId: "g-1", channelId: "c-main" }));
    await until(() => lastText(dc, "m-t1") === "You said: first question", 10_000);
    expect(repliesIn(dc, "m-t1")).toHaveLength(1);
    expect(threadStarts(dc)).toHaveLength(1);
    expect(threadStarts(dc)[0].path).toBe("/channels/c-main/messages/m-t1/threads");
    expect(threadStarts(dc)[0].body.name).toBe("deerflow-user501-m-t1");
    expect(repliesIn(dc, "c-main")).toEqual([]);
    expect(repliesIn(dc, "m-t1")[0].reply_to).toBeNull();

    let n = 0;
    await sendWhenFree(dc, "m-t1", () => discordMessage(`m-t2-${n++}`, "501", "follow up", { guildId: "g-1", channelId: "m-t1" }));
    await until(() => lastText(dc, "m-t1") === "You said: follow up", 10_000);
    expect(threadStarts(dc)).toHaveLength(1);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    expect(threads[0].metadata.channel_source).toMatchObject({ provider: "discord", chat_id: "c-main", topic_id: "m-t1" });
    const state = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/state`)).json();
    expect(state.values.messages.filter((m: { type: string }) => m.type === "human").map((m: { content: string }) => m.content)).toEqual(["first question", "follow up"]);

    // `/new` in the thread: the next message there starts a new gateway thread, still answered in the Discord thread.
    await sendWhenFree(dc, "m-t1", () => discordMessage(`m-new-${n++}`, "501", "/new", { guildId: "g-1", channelId: "m-t1" }));
    await until(() => lastText(dc, "m-t1") === "New conversation started.");
    dc.dispatch(discordMessage("m-t3", "501", "fresh start", { guildId: "g-1", channelId: "m-t1" }));
    await until(() => lastText(dc, "m-t1") === "You said: fresh start", 10_000);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toHaveLength(2);

    // A 429 and a 500 on the thread start are retried (the 429 after its retry_after); the answer is not lost.
    dc.failNext.push(429, 500);
    dc.dispatch(discordMessage("m-t4", "501", "retried start", { guildId: "g-1", channelId: "c-main" }));
    await until(() => lastText(dc, "m-t4") === "You said: retried start", 10_000);
    const starts = threadStarts(dc).filter((c) => c.path === "/channels/c-main/messages/m-t4/threads");
    expect(starts).toHaveLength(3);
    expect(starts[1].at - starts[0].at).toBeGreaterThanOrEqual(950);
  }, 30_000);

  it("defaults to mention_only (upstream): a mention starts a thread, the thread continues without one; another's thread and a refused start answer in place", async () => {
    const { dc, alice } = await setup("502", ["    mention_only: true"]);
    dc.dispatch(discordMessage("m-plain", "502", "not for the bot", { guildId: "g-1", channelId: "c-main" }));
    dc.dispatch(discordMessage("m-at", "502", `<@${dc.botId}> hello there`, { guildId: "g-1", channelId: "c-main", mentions: [dc.botId] }));
    await until(() => lastText(dc, "m-at") === "You said: hello there", 10_000);
    expect(threadStarts(dc).map((c) => c.path)).toEqual(["/channels/c-main/messages/m-at/threads"]);

    // A thread this bot started earlier (another process, before a restart): looked up, continued without a mention.
    dc.channels.set("t-old", { id: "t-old", type: 11, guild_id: "g-1", parent_id: "c-main", owner_id: dc.botId });
    dc.dispatch(discordMessage("m-old", "502", "still here", { guildId: "g-1", channelId: "t-old" }));
    await until(() => lastText(dc, "t-old") === "You said: still here", 10_000);
    expect(dc.calls.some((c) => c.verb === "GET" && c.path === "/channels/t-old")).toBe(true);

    // Someone else's thread: only a mention is answered, in place, replying to the message (threads do not nest).
    dc.channels.set("t-user", { id: "t-user", type: 11, guild_id: "g-1", parent_id: "c-main", owner_id: "999" });
    dc.dispatch(discordMessage("m-u1", "502", "ignored without a mention", { guildId: "g-1", channelId: "t-user" }));
    dc.dispatch(discordMessage("m-u2", "502", `<@${dc.botId}> in their thread`, { guildId: "g-1", channelId: "t-user", mentions: [dc.botId] }));
    await until(() => lastText(dc, "t-user") === "You said: in their thread", 10_000);
    expect(repliesIn(dc, "t-user").map((s) => s.reply_to)).toEqual(["m-u2"]);

    // Threads refused (missing permission): the answer goes into the channel as a reply.
    dc.channels.set("c-locked", { id: "c-locked", type: 0, guild_id: "g-1", no_threads: true });
    dc.dispatch(discordMessage("m-l", "502", `<@${dc.botId}> locked channel`, { guildId: "g-1", channelId: "c-locked", mentions: [dc.botId] }));
    await until(() => lastText(dc, "c-locked") === "You said: locked channel", 10_000);
    expect(repliesIn(dc, "c-locked").map((s) => s.reply_to)).toEqual(["m-l"]);
    expect(threadStarts(dc).map((c) => c.path)).toContain("/channels/c-locked/messages/m-l/threads");
    expect(repliesIn(dc, "c-main")).toEqual([]);
    expect(dc.sent.flatMap((s) => s.texts).some((t) => t.includes("not for the bot") || t.includes("without a mention"))).toBe(false);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toHaveLength(4);
  });
});

describe("Discord files", () => {
  it("round-trips a file: the user's attachment becomes an upload the agent reads, the presented output is posted as files[0]", async () => {
    const { dc, alice } = await setup("601");
    const note = dc.addAttachment("note.txt", Buffer.from("the secret number is 4242\n"), { contentType: "text/plain" });
    dc.dispatch(discordMessage("m-f1", "601", '!call read_file {"description":"read it","path":"/mnt/user-data/uploads/note.txt"}', { attachments: [note] }));
    await until(() => lastText(dc, "dm-601").includes("the secret number is 4242"), 15_000);
    expect(dc.downloads).toBe(1);
    // No token goes to the attachment URL.
    expect(dc.calls.find((c) => c.path.startsWith("/attachments/"))?.headers.authorization).toBeUndefined();
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    const uploads = await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json();
    expect(uploads.files).toEqual([expect.objectContaining({ filename: "note.txt", size: 26 })]);

    const bytes = "report line 1\nreport line 2 \u00e9\n";
    let n = 0;
    await sendWhenFree(dc, "dm-601", () => discordMessage(`m-w-${n++}`, "601", `!call write_file ${JSON.stringify({ description: "write", path: "/mnt/user-data/outputs/report.txt", content: bytes })}`));
    await until(() => /^Tool write_file returned: OK/.test(lastText(dc, "dm-601")), 15_000);
    await sendWhenFree(dc, "dm-601", () => discordMessage(`m-p-${n++}`, "601", '!call present_files {"filepaths":["/mnt/user-data/outputs/report.txt"]}'));
    await until(() => dc.sent.some((s) => s.files.length > 0), 15_000);
    const posted = dc.sent.find((s) => s.files.length > 0)!;
    expect(posted.channel_id).toBe("dm-601");
    expect(posted.files).toHaveLength(1);
    expect(posted.files[0].filename).toBe("report.txt");
    expect(posted.files[0].data.toString("utf8")).toBe(bytes);
    const upload = dc.calls.find((c) => typeof c.body.payload_json === "string")!;
    expect(JSON.parse(upload.body.payload_json)).toMatchObject({ attachments: [{ id: 0, filename: "report.txt" }], allowed_mentions: { parse: [] } });
    await until(() => dc.sent.some((s) => s.texts.at(-1)!.includes("Created File: 📎 report.txt")));
  }, 40_000);

  it("refuses an attachment over the limit from its declared size, and one off Discord's CDN, before any download or run", async () => {
    const { dc, alice } = await setup("602");
    const huge = dc.addAttachment("huge.zip", Buffer.from("small body, large claim"), { size: 100 * 1024 * 1024 + 1 });
    dc.dispatch(discordMessage("m-huge", "602", "please unzip", { attachments: [huge] }));
    await until(() => lastText(dc, "dm-602").startsWith("The file huge.zip is too large"));
    expect(lastText(dc, "dm-602")).toBe("The file huge.zip is too large (the limit is 50 MB). Nothing was processed; please send a smaller file.");

    // A URL the fake serves, but on another origin (`localhost`): not Discord's CDN, not the api_base origin.
    const served = dc.addAttachment("x.txt", Buffer.from("internal"));
    const elsewhere = { ...served, url: String(served.url).replace("127.0.0.1", "localhost") };
    dc.dispatch(discordMessage("m-ssrf", "602", "read this", { attachments: [elsewhere] }));
    await until(() => repliesIn(dc, "dm-602").length === 3);
    expect(lastText(dc, "dm-602")).toBe("An internal error occurred. Please try again.");
    expect(dc.downloads).toBe(0);
    for (const t of await (await alice.fetch("/api/threads/search", { json: {} })).json()) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  });
});
