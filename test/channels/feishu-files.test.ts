// Feishu files both ways, end to end over the long connection: an image in a rich-text (`post`) message and a `file`
// message become uploads of the conversation's thread (`GET im/v1/messages/{id}/resources/{key}?type=...` with the
// tenant token) that the agent reads; the files the agent presents are uploaded (`im/v1/files`, `im/v1/images`) and
// sent as `file` / `image` messages where the answer went; a file over the limit is refused with a message in the chat.
import { afterEach, describe, expect, it } from "vitest";
import { signUp, type Session } from "../support/auth-client.js";
import { startHarness, type Harness } from "../support/harness.js";
import { feishuMessage, feishuText, startFeishuFake, type FeishuFake } from "../support/fakes/feishu.js";
import { attachLongConnection, type FeishuLongConnectionFake } from "../support/fakes/feishu-ws.js";
import { until } from "../support/wait.js";

let h: Harness | undefined;
let fs: FeishuFake | undefined;
let lc: FeishuLongConnectionFake | undefined;
afterEach(async () => {
  await h?.close();
  await lc?.close();
  await fs?.close();
  h = fs = lc = undefined;
});

function config(fake: FeishuFake, uploads: string): string {
  return [
    "models:", "  - name: s", "    use: deerflow-gateway:ScriptedChatModel", "    model: s", "    token_delay_ms: 1",
    "tools:",
    "  - { name: read_file, group: file:read, use: deerflow.sandbox.tools:read_file_tool }",
    "  - { name: write_file, group: file:write, use: deerflow.sandbox.tools:write_file_tool }",
    "tool_groups: [{ name: file:read }, { name: file:write }]",
    "channels:", "  feishu:", "    enabled: true", `    app_id: ${fake.appId}`, `    app_secret: ${fake.appSecret}`, `    domain: ${fake.url}`,
    "    stream_edit_interval_ms: 30",
    "channel_connections:", "  enabled: true", "  feishu:", "    enabled: true", uploads, "",
  ].join("\n");
}

async function setup(uploads = ""): Promise<{ fs: FeishuFake; lc: FeishuLongConnectionFake; alice: Session }> {
  fs = await startFeishuFake("cli_0123456789abcdef", "secret");
  lc = await attachLongConnection(fs, { pingIntervalS: 120 });
  h = await startHarness(config(fs, uploads), { authDisabled: false });
  const alice = await signUp(h.url, "alice@example.com", "correct horse battery", "initialize");
  const fake = fs;
  const conn = lc;
  await until(() => conn.connections() === 1, 15_000);
  const { code } = await (await alice.fetch("/api/channels/feishu/connect", { method: "POST" })).json();
  conn.push(feishuText("ev-connect", "ou_f", `/connect ${code}`));
  await until(() => fake.sent.some((s) => s.texts[0] === "Feishu connected to DeerFlow."));
  return { fs, lc, alice };
}

const answerTo = (fake: FeishuFake, eventId: string) => fake.sent.find((s) => s.reply_to === `om_in_${eventId}` && s.msg_type === "interactive")?.texts.at(-1) ?? "";
const BUSY = "This conversation is already processing another request. Please wait for it to finish and try again.";

/** Sends a text once the conversation takes it (the previous run may still be finishing after its answer). */
async function sendWhenFree(fake: FeishuFake, conn: FeishuLongConnectionFake, eventId: string, text: string): Promise<void> {
  for (let i = 0; ; i++) {
    const id = `${eventId}-${i}`;
    conn.push(feishuText(id, "ou_f", text));
    await until(() => answerTo(fake, id) !== "", 15_000);
    if (answerTo(fake, id) !== BUSY) return;
  }
}

describe("Feishu files", () => {
  it("round-trips files: a post's image and a file message become uploads the agent reads; presented outputs are uploaded and sent", async () => {
    const { fs, lc, alice } = await setup();
    fs.addResource("om_in_ev-img", "img_v3_0123456789ab", Buffer.from("image bytes: the answer is 4242"));
    const read = `!call read_file ${JSON.stringify({ description: "read it", path: "/mnt/user-data/uploads/feishu-image-0123456789ab.png" })}`;
    lc.push(feishuMessage("ev-img", "ou_f", "post", { title: "", content: [[{ tag: "text", text: read }], [{ tag: "img", image_key: "img_v3_0123456789ab" }]] }));
    await until(() => answerTo(fs, "ev-img").includes("the answer is 4242"), 15_000);
    const download = fs.calls.find((c) => c.verb === "GET" && c.path.includes("/resources/"))!;
    expect(download.path).toBe("/open-apis/im/v1/messages/om_in_ev-img/resources/img_v3_0123456789ab?type=image");
    expect(download.headers.authorization).toMatch(/^Bearer t-/);

    fs.addResource("om_in_ev-file", "file_v3_data", Buffer.from("a,b\n1,2\n"));
    lc.push(feishuMessage("ev-file", "ou_f", "file", { file_key: "file_v3_data", file_name: "data.csv" }));
    const [thread] = await (await alice.fetch("/api/threads/search", { json: {} })).json();
    await until(async () => (await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json()).files.length === 2, 15_000);
    const uploads = await (await alice.fetch(`/api/threads/${thread.thread_id}/uploads/list`)).json();
    expect(uploads.files.map((f: { filename: string }) => f.filename).sort()).toEqual(["data.csv", "feishu-image-0123456789ab.png"]);

    const text = "report line 1\nreport line 2 \u00e9\n";
    await sendWhenFree(fs, lc, "ev-w1", `!call write_file ${JSON.stringify({ description: "write", path: "/mnt/user-data/outputs/report.pdf", content: text })}`);
    await sendWhenFree(fs, lc, "ev-w2", `!call write_file ${JSON.stringify({ description: "write", path: "/mnt/user-data/outputs/chart.png", content: "png bytes" })}`);
    await sendWhenFree(fs, lc, "ev-present", '!call present_files {"filepaths":["/mnt/user-data/outputs/report.pdf","/mnt/user-data/outputs/chart.png"]}');
    await until(() => fs.uploads.length === 2, 15_000);
    const pdf = fs.uploads.find((u) => u.kind === "file")!;
    expect(pdf).toMatchObject({ file_type: "pdf", file_name: "report.pdf" });
    expect(pdf.data.toString("utf8")).toBe(text);
    const png = fs.uploads.find((u) => u.kind === "image")!;
    expect(png.data.toString("utf8")).toBe("png bytes");
    await until(() => fs.sent.filter((s) => s.msg_type !== "interactive").length === 2, 15_000);
    const present = fs.sent.find((s) => s.msg_type === "interactive" && /Created Files: 📎 (report\.pdf、chart\.png|chart\.png、report\.pdf)$/.test(s.texts.at(-1) ?? ""))!;
    expect(present).toBeDefined();
    const fileMessages = fs.sent.filter((s) => s.msg_type !== "interactive");
    expect(fileMessages.map((s) => [s.msg_type, s.key]).sort()).toEqual([["file", pdf.key], ["image", png.key]]);
    expect(fileMessages.every((s) => s.reply_to === present.reply_to)).toBe(true);
  }, 90_000);

  it("refuses a file over the limit with a message in the chat: a 100 MB one is not read, nothing is stored and no run starts", async () => {
    const { fs, lc, alice } = await setup();
    fs.addResource("om_in_ev-huge", "file_v3_huge", Buffer.alloc(2048, 1), { claimSize: 100 * 1024 * 1024 + 1 });
    lc.push(feishuMessage("ev-huge", "ou_f", "file", { file_key: "file_v3_huge", file_name: "huge.zip" }));
    await until(() => answerTo(fs, "ev-huge") !== "", 15_000);
    expect(answerTo(fs, "ev-huge")).toBe("The file huge.zip is too large (the limit is 50 MB). Nothing was processed; please send a smaller file.");
    for (const t of await (await alice.fetch("/api/threads/search", { json: {} })).json()) {
      expect((await (await alice.fetch(`/api/threads/${t.thread_id}/uploads/list`)).json()).files).toEqual([]);
      expect(await (await alice.fetch(`/api/threads/${t.thread_id}/runs`)).json()).toEqual([]);
    }
  }, 40_000);
});
