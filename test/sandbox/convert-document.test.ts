import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { convertToMarkdown, convertUploadedDocument, DEFAULT_CONVERSION_LIMITS, WORKER_THRESHOLD_BYTES } from "../../src/sandbox/convert-document.js";
import { makeDocx, makePdf, makePptx, makeXlsx } from "../support/documents.js";

const dir = mkdtempSync(path.join(tmpdir(), "convert-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, data: Buffer | string) => {
  const p = path.join(dir, name);
  writeFileSync(p, data);
  return p;
};

describe("convertToMarkdown", () => {
  it("turns each supported format into Markdown that keeps its text and structure", async () => {
    expect(await convertToMarkdown(file("a.docx", await makeDocx(["Quarterly report", "Revenue grew 12%."])))).toBe("**Quarterly report**\n\nRevenue grew 12%.\n");
    expect(await convertToMarkdown(file("a.pdf", makePdf(["First page text", "Second page text"])))).toBe("## Page 1\n\nFirst page text\n\n## Page 2\n\nSecond page text\n");
    expect(await convertToMarkdown(file("a.xlsx", await makeXlsx("Sales", [["region", "total"], ["north", 10], ["south|east", 20]])))).toBe(
      "## Sales\n\n| region | total |\n| --- | --- |\n| north | 10 |\n| south\\|east | 20 |\n",
    );
    expect(await convertToMarkdown(file("a.pptx", await makePptx([["Title slide", "Agenda & goals"], ["Second"]])))).toBe("## Slide 1\n\nTitle slide\n\nAgenda & goals\n\n## Slide 2\n\nSecond\n");
    expect(await convertToMarkdown(file("a.html", "<html><head><script>x()</script></head><body><h1>Title</h1><ul><li>one</li></ul><p>A <a href=\"https://e.x\">link</a></p></body></html>"))).toBe(
      "# Title\n\n-   one\n\nA [link](https://e.x)\n",
    );
  });

  it("applies the page, row, size and output limits", async () => {
    const limits = { ...DEFAULT_CONVERSION_LIMITS, maxPages: 1, maxSheetRows: 2, maxOutputChars: 20 };
    expect(await convertToMarkdown(file("p.pdf", makePdf(["one", "two", "three"])), { ...limits, maxOutputChars: 1000 })).toContain("*(2 more pages not converted: the limit is 1)*");
    expect(await convertToMarkdown(file("r.xlsx", await makeXlsx("S", [["h"], [1], [2], [3]])), { ...limits, maxOutputChars: 1000 })).toContain("*(more rows not converted: the limit is 2 per sheet)*");
    expect(await convertToMarkdown(file("l.html", `<p>${"x".repeat(100)}</p>`), limits)).toContain("*(truncated: the converted text is longer than 20 characters)*");
    await expect(convertToMarkdown(file("big.html", "<p>big</p>"), { ...limits, maxInputBytes: 3 })).rejects.toThrow("documents over 3 bytes are not converted");
  });
});

describe("convertUploadedDocument", () => {
  it("converts a document over 1 MB in a worker thread and writes its Markdown twin", async () => {
    const big = file("big.html", `<h1>Big</h1>${"<p>filler paragraph text</p>".repeat(45_000)}`);
    expect(statSync(big).size).toBeGreaterThan(WORKER_THRESHOLD_BYTES);
    expect(await convertUploadedDocument(big)).toEqual({ markdown_file: "big.md" });
    const md = readFileSync(path.join(dir, "big.md"), "utf8");
    expect(md.startsWith("# Big\n\nfiller paragraph text")).toBe(true);
  });

  it("reports a corrupt document as conversion_error instead of throwing", async () => {
    const bad = file("bad.docx", "not a zip");
    expect(await convertUploadedDocument(bad)).toEqual({ conversion_error: expect.stringMatching(/^Could not convert bad\.docx to Markdown: the file could not be read as DOCX/) });
    expect(existsSync(path.join(dir, "bad.md"))).toBe(false);
  });
});
