import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/sandbox/local-provider.js";
import type { LocalSandbox } from "../../src/sandbox/local-sandbox.js";
import { convertUploads, UploadBatch } from "../../src/sandbox/uploads.js";
import { makeDocx, makePdf } from "../support/documents.js";

// Issue 42, item 11: a document's Markdown twin never replaces a file that is already there (the user's own
// `notes.md`, another document's twin); the upload response names the twin actually written.
const LIMITS = { max_files: 10, max_file_size: 10 * 1024 * 1024, max_total_size: 20 * 1024 * 1024 };
let home: string;
let sandbox: LocalSandbox;
beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "twins-"));
  const provider = new LocalSandboxProvider({ baseDir: home });
  provider.acquire("t", { userId: "u" });
  sandbox = provider.sandboxFor("t", "u");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

/** Uploads `files` in one request and converts them, as the upload route does. */
async function upload(files: [string, string | Buffer][]) {
  const batch = new UploadBatch(sandbox, LIMITS);
  for (const [name, content] of files) await batch.add(name, Readable.from([Buffer.from(content)]));
  return convertUploads(sandbox, await batch.commit());
}
const read = (name: string) => readFileSync(path.join(sandbox.dirs.uploads, name), "utf8");

describe("converted twins", () => {
  it("never overwrite a Markdown file the user uploaded before; the response names the twin written", async () => {
    await upload([["notes.md", "my own notes\n"]]);
    const [html] = await upload([["notes.html", "<h1>Converted</h1>"]]);
    expect(read("notes.md")).toBe("my own notes\n");
    expect(html).toMatchObject({
      filename: "notes.html",
      markdown_file: "notes_1.md",
      markdown_path: "/mnt/user-data/uploads/notes_1.md",
      markdown_virtual_path: "/mnt/user-data/uploads/notes_1.md",
      markdown_artifact_url: "/api/threads/t/artifacts/mnt/user-data/uploads/notes_1.md",
    });
    expect(read("notes_1.md")).toBe("# Converted\n");
  });

  it("give two documents of the same stem in one request two twins", async () => {
    const out = await upload([["a.docx", await makeDocx(["from docx"])], ["a.pdf", makePdf(["from pdf"])]]);
    expect(out.map((f) => f.markdown_file)).toEqual(["a.md", "a_1.md"]);
    expect(read("a.md")).toContain("from docx");
    expect(read("a_1.md")).toContain("from pdf");
  });

  it("never overwrite a same-named Markdown file uploaded in the same request", async () => {
    const out = await upload([["r.md", "user text\n"], ["r.html", "<p>converted</p>"]]);
    expect(read("r.md")).toBe("user text\n");
    expect(out[1].markdown_file).toBe("r_1.md");
  });

  it("never write through a symlink planted at the twin's name", async () => {
    const outside = path.join(home, "outside.md");
    writeFileSync(outside, "gateway file\n");
    symlinkSync(outside, path.join(sandbox.dirs.uploads, "x.md"));
    const [x] = await upload([["x.html", "<p>doc</p>"]]);
    expect(readFileSync(outside, "utf8")).toBe("gateway file\n");
    expect(x.markdown_file).toBe("x_1.md");
    expect(readdirSync(sandbox.dirs.uploads).filter((n) => n.endsWith(".part"))).toEqual([]);
  });
});
