// Telegram files and clarifications end to end: the gateway over HTTP (auth on), the Bot API fake speaking getFile,
// the file download URL and sendDocument. A document the user sends becomes a thread upload the agent reads; a file
// the agent writes and presents arrives as a document with the right bytes; a 100 MB document is refused unread;
// an ask_clarification question is posted and the next message answers it on the same thread.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startTelegramFake, type TelegramFake } from "../support/fakes/telegram.js";
import { until } from "../support/wait.js";

const SECRET = "webhook-secret-files";

function config(tg: TelegramFake, uploads = ""): string {
  return [
    "models:",
    "  - name: s",
    "    use: deerflow-gateway:ScriptedChatModel",
    "    model: s",
    "    token_delay_ms: 1",
    "tools:",
    "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }",
    "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:",
    "  telegram:",
    "    enabled: true",
    `    bot_token: "${tg.token}"`,
    `    api_base: ${tg.url}`,
    "    mode: webhook",
    `    webhook_secret: ${SECRET}`,
    "    stream_edit_interval_ms: 30",
    "channel_connections:",
    "  enabled: true",
    "  telegram:",
    "    enabled: true",
    "    bot_username: deerflow_test_bot",
    uploads,
    "",
  ].join("\n");
}

let h: Harness | undefined;
let tg: TelegramFake | undefined;
afterEach(async () => {
  await h?.close();
  await tg?.close();
  h = tg = undefined;
});

function deliver(harness: Harness, update: Record<string, unknown>): Promise<Response> {
  return fetch(`${harness.url}/api/channels/webhooks/telegram`, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update) });
}

/** A harness with alice connected as Telegram user `tgUser`. */
async function setup(tgUser: number, uploads = ""): Promise<{ h: Harness; tg: TelegramFake; alice: Session }> {
  tg = await startTelegramFake();
  h = await startHarness(config(tg, uploads), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const { code } = await (await alice.fetch("/api/channels/telegram/connect", { method: "POST" })).json();
  await deliver(h, tg.dm(tgUser, `/start ${code}`));
  await until(() => tg!.sent.some((s) => s.texts[0] === "Telegram connected to DeerFlow."));
  return { h, tg, alice };
}

const BUSY = "This conversation is already processing another request. Please wait for it to finish and try again.";

/**
 * Sends a DM once the conversation takes it: the previous run's worker may still be finishing (workspace scan)
 * after its answer was written, and the gateway then answers the run policy's busy notice; the user sends again.
 */
async function sendWhenFree(harness: Harness, fake: TelegramFake, user: number, text: string): Promise<void> {
  for (;;) {
    const before = fake.calls.filter((c) => c.method === "sendMessage").length;
    await deliver(harness, fake.dm(user, text));
    await until(() => fake.calls.filter((c) => c.method === "sendMessage").length > before, 15_000);
    if (fake.calls.filter((c) => c.method === "sendMessage")[before].body.text !== BUSY) return;
  }
}

const lastText = (fake: TelegramFake, chatId: number) => fake.sent.filter((s) => s.chat_id === String(chatId)).at(-1)?.texts.at(-1) ?? "";

describe("Telegram files and clarifications", () => {
  it("round-trips a file: the user's document becomes an upload the agent reads, the presented output arrives as a document", async () => {
    const { h, tg, alice } = await setup(701);
    const fileId = tg.addFile(Buffer.from("the secret number is 4242\n"));
    await deliver(h, tg.documentDm(701, { file_id: fileId, file_name: "note.txt", mime_type: "text/plain" }, '!call read_file {"description":"read it","path":"/mnt/user-data/uploads/note.txt"}'));
    await until(() => lastText(tg, 701).includes("the secret number is 4242"), 15_000);
    expect(lastText(tg, 701)).toMatch(/^Tool read_file returned: /);
    expect(tg.calls.filter((c) => c.method === "getFile")).toHaveLength(1);

    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    const uploads = await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json();
    expect(uploads.files).toEqual([expect.objectContaining({ filename: "note.txt", size: 26 })]);
    const state = await (await alice.fetch(`/api/threads/${thread.thread_id}/state`)).json();
    const human = state.values.messages.find((m: { type: string }) => m.type === "human");
    expect(human.additional_kwargs.files).toEqual([expect.objectContaining({ filename: "note.txt", path: "/mnt/user-data/uploads/note.txt" })]);

    const bytes = "report line 1\nreport line 2 \u00e9\n";
    await sendWhenFree(h, tg, 701, `!call write_file ${JSON.stringify({ description: "write", path: "/mnt/user-data/outputs/report.txt", content: bytes })}`);
    await until(() => /^Tool write_file returned: OK/.test(lastText(tg, 701)), 15_000);
    await sendWhenFree(h, tg, 701, '!call present_files {"filepaths":["/mnt/user-data/outputs/report.txt"]}');
    await until(() => tg.documents.length === 1, 15_000);
    expect(tg.documents[0]).toMatchObject({ chat_id: "701", filename: "report.txt" });
    expect(tg.documents[0].data.toString("utf8")).toBe(bytes);
    await until(() => lastText(tg, 701).includes("Created File: 📎 report.txt"));
  }, 40_000);

  it("refuses a 100 MB document from its declared size: a message in the chat, no download, nothing created", async () => {
    const { h, tg, alice } = await setup(702);
    const fileId = tg.addFile(Buffer.from("small body, large claim"));
    await deliver(h, tg.documentDm(702, { file_id: fileId, file_name: "huge.zip", file_size: 100 * 1024 * 1024 + 1 }, "please unzip"));
    await until(() => lastText(tg, 702).startsWith("The file huge.zip is too large"));
    expect(lastText(tg, 702)).toBe("The file huge.zip is too large (the limit is 50 MB). Nothing was processed; please send a smaller file.");
    expect(tg.calls.filter((c) => c.method === "getFile" || c.httpMethod === "GET")).toEqual([]);
    expect(await (await alice.fetch("/api/threads/search", { json: {} })).json()).toEqual([]);
  });

  it("refuses a file whose download turns out larger than the upload limit, and stores nothing", async () => {
    const { h, tg, alice } = await setup(703, "uploads:\n  max_file_size: 1000");
    // The platform declares no size: the download itself is cut at the limit.
    const fileId = tg.addFile(Buffer.alloc(5000, 1));
    const update = tg.documentDm(703, { file_id: fileId, file_name: "blob.bin" }, "what is this?");
    delete ((update.message as { document: { file_size?: number } }).document).file_size;
    await deliver(h, update);
    await until(() => lastText(tg, 703).startsWith("The file blob.bin is too large"));
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    for (const t of threads) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  });

  it("posts an ask_clarification question, and the next message answers it on the same thread", async () => {
    const { h, tg, alice } = await setup(704);
    await deliver(h, tg.dm(704, '!call ask_clarification {"question":"Which city do you mean?","clarification_type":"missing_info"}'));
    await until(() => lastText(tg, 704).includes("Which city do you mean?"), 15_000);
    await sendWhenFree(h, tg, 704, "Paris");
    await until(() => lastText(tg, 704) === "You said: Paris", 15_000);
    const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    expect(threads).toHaveLength(1);
    const state = await (await alice.fetch(`/api/threads/${threads[0].thread_id}/state`)).json();
    const kinds = state.values.messages.map((m: { type: string; name?: string }) => (m.type === "tool" ? `tool:${m.name}` : m.type));
    expect(kinds).toEqual(["human", "ai", "tool:ask_clarification", "human", "ai"]);
  }, 30_000);
});
