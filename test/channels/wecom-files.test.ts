// Files a WeCom user sends: the callback's url + aeskey are downloaded, decrypted (AES-256-CBC) and stored as the
// thread's uploads under the download's Content-Disposition name; a file over the limit is refused in the chat and
// nothing is stored or run.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { startWecomFake, type WecomFake } from "../support/fakes/wecom.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let wc: WecomFake | undefined;
afterEach(async () => {
  await h?.close();
  await wc?.close();
  h = wc = undefined;
});

async function setup(uploads = ""): Promise<{ wc: WecomFake; alice: Session }> {
  const fake = (wc = await startWecomFake());
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s",
    "tools:", "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }", "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:", "  wecom:", "    enabled: true", `    bot_id: ${fake.botId}`, `    bot_secret: ${fake.secret}`, `    ws_url: ${fake.url}`,
    "channel_connections:", "  enabled: true", "  wecom:", "    enabled: true", uploads, "",
  ].join("\n"), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.connections() === 1);
  const code = (await (await alice.fetch("/api/channels/wecom/connect", { method: "POST" })).json()).code;
  fake.deliver({ msgid: "c", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "text", text: { content: `/connect ${code}` } });
  await until(() => fake.streams.at(-1)?.texts.at(-1) === "WeCom connected to DeerFlow.");
  return { wc: fake, alice };
}

const answerTo = (fake: WecomFake, reqId: string) => fake.streams.find((s) => s.reqId === reqId && s.finished)?.texts.at(-1);

describe("WeCom files", () => {
  it("stores an encrypted file of a mixed message as an upload the agent reads, under its download name", async () => {
    const { wc, alice } = await setup();
    const content = "the quarterly numbers: 42";
    const file = wc.hostFile(Buffer.from(content), "note.txt");
    const reqId = wc.deliver({
      msgid: "m-file", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "mixed",
      mixed: { msg_item: [{ msgtype: "text", text: { content: '!call read_file {"description":"read it","path":"/mnt/user-data/uploads/note.txt"}' } }, { msgtype: "image", image: file }] },
    });
    await until(() => answerTo(wc, reqId) !== undefined, 15_000);
    expect(answerTo(wc, reqId)).toMatch(/^Tool read_file returned: /);
    expect(answerTo(wc, reqId)).toContain(content);
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    const uploads = await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json();
    expect(uploads.files).toEqual([expect.objectContaining({ filename: "note.txt", size: content.length })]);
  }, 30_000);

  it("posts a presented file into the chat: uploaded over the long connection, then a file reply to the message", async () => {
    const { wc, alice } = await setup();
    const bytes = "report line 1\nreport line 2 \u00e9\n";
    const write = wc.deliver({ msgid: "m-w", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "text", text: { content: `!call write_file ${JSON.stringify({ description: "write", path: "/mnt/user-data/outputs/report.txt", content: bytes })}` } });
    await until(() => /^Tool write_file returned: OK/.test(answerTo(wc, write) ?? ""), 15_000);
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    await until(async () => (await (await alice.fetch(`/api/threads/${thread.thread_id}/runs`)).json()).every((r: { status: string }) => r.status === "success"));
    const present = wc.deliver({ msgid: "m-p", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "text", text: { content: '!call present_files {"filepaths":["/mnt/user-data/outputs/report.txt"]}' } });
    await until(() => wc.media.length === 1, 15_000);
    expect(wc.media[0]).toMatchObject({ reqId: present, type: "file", filename: "report.txt" });
    expect(wc.media[0].data.toString("utf8")).toBe(bytes);
    expect(answerTo(wc, present)).toContain("Created File: 📎 report.txt");
  }, 40_000);

  it("refuses a file over the limit in the chat: nothing stored, no run", async () => {
    const { wc, alice } = await setup("uploads:\n  max_file_size: 1000");
    const file = wc.hostFile(Buffer.alloc(5000, 7), "big.bin");
    const reqId = wc.deliver({ msgid: "m-big", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "file", file });
    await until(() => answerTo(wc, reqId) !== undefined, 15_000);
    expect(answerTo(wc, reqId)).toMatch(/^The file wecom-file-m-big-1\.bin is too large \(the limit is 0 MB\)\. Nothing was processed/);
    for (const t of await (await alice.fetch("/api/threads/search", { json: {} })).json()) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  }, 30_000);
  it("refuses a file URL on a private address other than the configured root (SSRF): nothing fetched, stored or run", async () => {
    const { wc, alice } = await setup();
    const file = wc.hostFile(Buffer.from("internal"), "secret.txt");
    // The same fake file server, reached by a name that resolves to loopback: a stand-in for any internal service.
    const internal = { ...file, url: file.url.replace("127.0.0.1", "localhost") };
    expect(internal.url).not.toBe(file.url);
    const reqId = wc.deliver({ msgid: "m-ssrf", aibotid: "bot-1", chattype: "single", from: { userid: "u-f" }, msgtype: "file", file: internal });
    await until(() => answerTo(wc, reqId) !== undefined, 15_000);
    expect(answerTo(wc, reqId)).toBe("An internal error occurred. Please try again.");
    expect(wc.downloads).toBe(0);
    for (const t of await (await alice.fetch("/api/threads/search", { json: {} })).json()) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  }, 30_000);
});
