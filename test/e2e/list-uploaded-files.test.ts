import { utimesSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePdf } from "../support/documents.js";
import { useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// Earlier turns' uploads are not listed in the prompt; the lead agent discovers them
// with the built-in `list_uploaded_files` tool, over HTTP against the fake OpenAI server.
const fake = useFakeOpenAI();
let h: Harness;

beforeAll(async () => {
  h = await startHarness(`models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}"}
uploads:
  auto_convert_documents: true
`);
});
afterAll(async () => {
  await h.close();
});

const upload = async (threadId: string, files: [string, Buffer | string][]) => expect((await uploadFiles(h.url, threadId, files)).status).toBe(200);
const uploadsDir = (thread: string) => path.join(h.dir, ".deer-flow", "users", "default", "threads", thread, "user-data", "uploads");
const attached = (filename: string) => ({ filename, size: 3, path: `/mnt/user-data/uploads/${filename}`, status: "uploaded" });

/** Has the fake model call `list_uploaded_files` once with `args`, then answer; returns the parsed tool result. */
async function listThroughModel(thread: string, args: Record<string, unknown>, message: Record<string, unknown>): Promise<any> {
  fake.respond = (req): FakeReply => (req.messages.some((m: any) => m.role === "tool") ? { content: "done" } : { toolCalls: [{ name: "list_uploaded_files", args }] });
  const run = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [message] } });
  expect(run.status).toBe(200);
  const tool = fake.requests.at(-1)!.body.messages.find((m: any) => m.role === "tool");
  return JSON.parse(tool.content);
}

describe("list_uploaded_files (agent-factory.md §2.9)", () => {
  it("is offered to the lead agent and lists earlier uploads newest first, without this run's files or Markdown twins", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    await upload(thread, [
      ["memo.pdf", makePdf(["Budget plan"])],
      ["data.csv", "a,b\n1,2\n"],
      ["new.txt", "new"],
    ]);
    const dir = uploadsDir(thread);
    // Distinct modification times so "newest first" is observable.
    utimesSync(path.join(dir, "memo.pdf"), new Date(2026, 0, 1), new Date(2026, 0, 1));
    utimesSync(path.join(dir, "data.csv"), new Date(2026, 0, 2), new Date(2026, 0, 2));

    const result = await listThroughModel(thread, { include_outline: ["memo.pdf"] }, { role: "user", content: "what did I upload before?", additional_kwargs: { files: [attached("new.txt")] } });
    expect(fake.requests[0].body.tools.map((t: any) => t.function.name)).toContain("list_uploaded_files");
    expect(result.message).toBe("Found 2 historical file(s).");
    expect(result.total_count).toBe(2);
    expect(result.files.map((f: any) => f.filename)).toEqual(["data.csv", "memo.pdf"]);
    expect(result.files[0]).toEqual({ filename: "data.csv", size: 8, path: "/mnt/user-data/uploads/data.csv", extension: ".csv" });
    expect(result.files[1].outline).toEqual([{ title: "Page 1", line: 1 }]);
    expect(JSON.stringify(result)).not.toContain(h.dir);
  });

  it("caps the list at max_results and counts the rest by extension", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    await upload(thread, [["a.csv", "1"], ["b.csv", "2"], ["c.pdf", "not a pdf"], ["d.txt", "4"]]);
    const result = await listThroughModel(thread, { max_results: 1 }, { role: "user", content: "list them" });
    expect(result.files).toHaveLength(1);
    expect(result.total_count).toBe(4);
    expect(result.truncated).toBe(true);
    expect(result.omitted_summary).toMatch(/^\d \.\w+(, \d \.\w+)*$/);
  });

  it("answers an empty list for a thread without uploads", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    const result = await listThroughModel(thread, {}, { role: "user", content: "anything uploaded?" });
    expect(result.files).toEqual([]);
    expect(result.message).toMatch(/^No (historical uploaded files in this thread|uploads directory for this thread)\.$/);
  });
});

describe("<current_uploads> outlines (agent-factory.md §6.2)", () => {
  it("lists each attached document's outline from its Markdown version, or its first lines without headings", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    await upload(thread, [
      ["deck.pdf", makePdf(["Quarterly <b>numbers</b>", "Outlook"])],
      ["notes.md", "first line of notes\nsecond line\n"],
      ["raw.csv", "a,b\n"],
    ]);
    fake.respond = () => ({ content: "ok" });
    const files = [attached("deck.pdf"), attached("notes.md"), attached("raw.csv")];
    const run = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "read these", additional_kwargs: { files } }] } });
    expect(run.status).toBe(200);
    const user = fake.requests[0].body.messages.find((m: any) => m.role === "user");
    const text = typeof user.content === "string" ? user.content : user.content.map((b: any) => b.text).join("");
    expect(text).toContain(
      "at /mnt/user-data/uploads/deck.pdf\n  Document outline (use `read_file` with line ranges to read sections):\n    L1: Page 1\n    L5: Page 2\n",
    );
    expect(text).toContain("at /mnt/user-data/uploads/notes.md\n  No structural headings detected. Document begins with:\n    > first line of notes\n    > second line\n");
    expect(text).toMatch(/at \/mnt\/user-data\/uploads\/raw\.csv\n(?! {2}Document| {2}No structural)/);
  });
});
