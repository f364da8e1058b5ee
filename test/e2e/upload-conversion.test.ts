import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useFakeOpenAI, type FakeReply } from "../support/fake-openai.js";
import { makeDocx, makePdf } from "../support/documents.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";

// Uploaded documents get a Markdown twin the agent reads (uploads.auto_convert_documents), over HTTP.
const fake = useFakeOpenAI();
let h: Harness;

beforeAll(async () => {
  h = await startHarness(`models:
  - {name: fake-gpt, use: "langchain_openai:ChatOpenAI", model: gpt-test, api_key: sk-test, base_url: "${fake.url}"}
tools:
  - {name: read_file, group: file:read, use: "deerflow.sandbox.tools:read_file_tool"}
uploads:
  auto_convert_documents: true
`);
});
afterAll(async () => {
  await h.close();
});

const upload = (threadId: string, files: [string, Buffer | string][]) => uploadFiles(h.url, threadId, files);

describe("document conversion on upload", () => {
  it("stores <name>.md next to each document, reports it, and the model reads the converted text", async () => {
    const thread = (await (await postJson(`${h.url}/threads`, {})).json()).thread_id;
    const res = await upload(thread, [
      ["report.pdf", makePdf(["PDF MARKER quarterly numbers"])],
      ["memo.docx", await makeDocx(["DOCX MARKER memo title", "Body text."])],
      ["broken.xlsx", "this is not a spreadsheet"],
      ["notes.txt", "plain"],
    ]);
    expect(res.status).toBe(200);
    const body = await res.json();
    const byName = Object.fromEntries(body.files.map((f: any) => [f.filename, f]));
    expect(byName["report.pdf"]).toMatchObject({ markdown_file: "report.md", markdown_virtual_path: "/mnt/user-data/uploads/report.md", markdown_artifact_url: `/api/threads/${thread}/artifacts/mnt/user-data/uploads/report.md` });
    expect(byName["memo.docx"]).toMatchObject({ markdown_file: "memo.md" });
    expect(byName["broken.xlsx"].conversion_error).toMatch(/^Could not convert broken\.xlsx to Markdown: the file could not be read as XLSX/);
    expect(byName["broken.xlsx"].conversion_error).not.toContain(h.dir);
    expect(byName["broken.xlsx"].markdown_file).toBeUndefined();
    expect(byName["notes.txt"]).not.toHaveProperty("markdown_file");
    expect(byName["notes.txt"]).not.toHaveProperty("conversion_error");
    const uploads = path.join(h.dir, ".deer-flow", "users", "default", "threads", thread, "user-data", "uploads");
    expect(readFileSync(path.join(uploads, "report.md"), "utf8")).toBe("## Page 1\n\nPDF MARKER quarterly numbers\n");
    expect(existsSync(path.join(uploads, "broken.xlsx"))).toBe(true); // the upload itself succeeded

    const calls = [{ name: "read_file", args: { path: "/mnt/user-data/uploads/report.md" } }, { name: "read_file", args: { path: "/mnt/user-data/uploads/memo.md" } }];
    fake.respond = (req): FakeReply => {
      const done = req.messages.filter((m: any) => m.role === "tool").length;
      return done < calls.length ? { toolCalls: [calls[done]] } : { content: "summarised" };
    };
    const run = await postJson(`${h.url}/threads/${thread}/runs/wait`, { input: { messages: [{ role: "user", content: "summarise my files" }] } });
    expect(run.status).toBe(200);
    const prompt = JSON.stringify(fake.requests.at(-1)!.body.messages);
    expect(prompt).toContain("PDF MARKER quarterly numbers");
    expect(prompt).toContain("**DOCX MARKER memo title**");

    // Deleting the document deletes its Markdown twin (DeerFlow delete_file_safe).
    expect((await fetch(`${h.url}/api/threads/${thread}/uploads/report.pdf`, { method: "DELETE" })).status).toBe(200);
    expect(existsSync(path.join(uploads, "report.md"))).toBe(false);
    expect(existsSync(path.join(uploads, "memo.md"))).toBe(true);
  });
});
