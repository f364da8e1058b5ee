// DingTalk files both ways through the gateway app: a picture / rich-text picture / file message's downloadCode is
// exchanged for a downloadUrl (robot/messageFiles/download), fetched and stored as the thread's uploads the agent
// reads; a presented output is uploaded by the oapi media/upload and sent as a sampleFile / sampleImageMsg robot
// message; a file over the limit is refused in the chat, nothing stored or run.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
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

async function setup(uploads: string[] = []): Promise<{ dt: DingTalkFake; alice: Session }> {
  const fake = (dt = await startDingTalkFake());
  h = await startHarness([
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s",
    "tools:", "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }", "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:", "  dingtalk:", "    enabled: true", `    client_id: ${fake.clientId}`, `    client_secret: ${fake.clientSecret}`, "    allowed_users: []", '    card_template_id: ""',
    `    api_base: ${fake.url}`, `    oapi_base: ${fake.url}`,
    "channel_connections:", "  enabled: true", "  dingtalk:", "    enabled: true", ...uploads, "",
  ].join("\n"), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  await until(() => fake.connections() === 1);
  const code = (await (await alice.fetch("/api/channels/dingtalk/connect", { method: "POST" })).json()).code;
  fake.push(dingtalkText("m-connect", "staff-f", `/connect ${code}`));
  await until(() => lastTo(fake)?.text === "DingTalk connected to DeerFlow.");
  return { dt: fake, alice };
}

const lastTo = (fake: DingTalkFake) => fake.sent.filter((s) => s.chat === "staff-f").at(-1);
/** A chatbot message of `msgtype` with `content` from the connected user (1:1). */
const message = (msgId: string, msgtype: string, content: Record<string, unknown>) => ({ ...dingtalkText(msgId, "staff-f", ""), text: undefined, msgtype, content });

async function threadOf(alice: Session): Promise<string> {
  const threads = await (await alice.fetch("/api/threads/search", { json: {} })).json();
  expect(threads).toHaveLength(1);
  return threads[0].thread_id;
}

async function idle(alice: Session, threadId: string): Promise<void> {
  await until(async () => (await (await alice.fetch(`/api/threads/${threadId}/runs`)).json()).every((r: { status: string }) => r.status === "success"), 15_000);
}

describe("DingTalk files", () => {
  it("stores rich-text pictures, pictures and files as uploads the agent reads (a 500 on the exchange retried)", async () => {
    const { dt, alice } = await setup();
    const content = "the quarterly numbers: 42";
    const picture = dt.hostFile(Buffer.from(content));
    const before = dt.sent.length;
    dt.push(message("m-rich", "richText", { richText: [{ text: '!call read_file {"description":"read it","path":"/mnt/user-data/uploads/dingtalk-image-m-rich-1.png"}' }, { type: "picture", downloadCode: picture, pictureDownloadCode: "pdc" }] }));
    await until(() => dt.sent.length > before && /^Tool read_file returned/.test(lastTo(dt)?.text ?? ""), 15_000);
    expect(lastTo(dt)?.text).toContain(content);
    const threadId = await threadOf(alice);
    await idle(alice, threadId);

    dt.failNext.push(500); // the next exchange fails once: retried, the file still arrives
    dt.push(message("m-file", "file", { downloadCode: dt.hostFile(Buffer.from("a,b\n1,2\n")), fileName: "numbers.csv", fileId: "f1", spaceId: "s1" }));
    dt.push(message("m-pic", "picture", { downloadCode: dt.hostFile(Buffer.alloc(300, 1)), pictureDownloadCode: "pdc" }));
    const list = async () => (await (await alice.fetch(`/api/threads/${threadId}/uploads/list`)).json()).files as { filename: string; size: number }[];
    await until(async () => (await list()).length === 3, 15_000);
    expect((await list()).map((f) => [f.filename, f.size]).sort()).toEqual([["dingtalk-image-m-pic.png", 300], ["dingtalk-image-m-rich-1.png", content.length], ["numbers.csv", 8]]);
    const exchanges = dt.calls.filter((c) => c.path === "/v1.0/robot/messageFiles/download");
    expect(exchanges.map((c) => c.body.robotCode)).toEqual([dt.clientId, dt.clientId, dt.clientId, dt.clientId]);
    expect(dt.downloads()).toBe(3);
  }, 40_000);

  it("posts presented files: media/upload, then sampleFile / sampleImageMsg to the user", async () => {
    const { dt, alice } = await setup();
    const bytes = "%PDF-1.4 report line \u00e9\n";
    const write = (p: string) => dt.push(dingtalkText(`m-w-${p}`, "staff-f", `!call write_file ${JSON.stringify({ description: "write", path: `/mnt/user-data/outputs/${p}`, content: bytes })}`));
    write("report.pdf");
    await until(() => /^Tool write_file returned: OK/.test(lastTo(dt)?.text ?? ""), 15_000);
    const threadId = await threadOf(alice);
    await idle(alice, threadId);
    write("chart.png");
    await until(() => dt.calls.filter((c) => c.method === "batchSend").length === 3, 15_000);
    await idle(alice, threadId);

    write("notes.txt");
    await until(() => dt.calls.filter((c) => c.method === "batchSend").length === 4, 15_000);
    await idle(alice, threadId);

    // A .txt is a type DingTalk's media upload refuses: skipped (it goes first: presented files are posted last-named first), the others still go.
    dt.push(dingtalkText("m-p", "staff-f", '!call present_files {"filepaths":["/mnt/user-data/outputs/report.pdf","/mnt/user-data/outputs/chart.png","/mnt/user-data/outputs/notes.txt"]}'));
    const fileMessages = () => dt!.sent.filter((s) => s.msgKey === "sampleFile" || s.msgKey === "sampleImageMsg");
    await until(() => fileMessages().length === 2, 15_000);
    const byName = new Map(dt.media.map((m) => [m.filename, m]));
    expect(dt.media).toHaveLength(2);
    expect([...byName.values()].map((m) => [m.type, m.filename, m.data.toString("utf8")]).sort()).toEqual([["file", "report.pdf", bytes], ["image", "chart.png", bytes]]);
    expect(fileMessages().map((s) => [s.to, s.chat, s.msgKey, s.param]).sort()).toEqual([
      ["user", "staff-f", "sampleFile", { mediaId: byName.get("report.pdf")!.mediaId, fileName: "report.pdf", fileType: "pdf" }],
      ["user", "staff-f", "sampleImageMsg", { photoURL: byName.get("chart.png")!.mediaId }],
    ]);
    expect(dt.sent.find((s) => s.msgKey === "sampleMarkdown" && /Created Files: 📎 .*notes\.txt/.test(s.text))).toBeDefined();
    // The oapi call carries the app token in its query, never the secret.
    expect(dt.calls.filter((c) => c.method === "upload").every((c) => /^\/media\/upload\?access_token=tok-\d+$/.test(c.path))).toBe(true);
  }, 40_000);

  it("refuses a file over the limit in the chat: nothing stored, no run", async () => {
    const { dt, alice } = await setup(["uploads:", "  max_file_size: 1000"]);
    dt.push(message("m-big", "file", { downloadCode: dt.hostFile(Buffer.alloc(5000, 7)), fileName: "big.bin" }));
    await until(() => /too large/.test(lastTo(dt)?.text ?? ""), 15_000);
    expect(lastTo(dt)?.text).toMatch(/^The file big\.bin is too large \(the limit is 0 MB\)\. Nothing was processed/);
    for (const t of await (await alice.fetch("/api/threads/search", { json: {} })).json()) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  }, 30_000);
});
