import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { convertToMarkdown, DEFAULT_CONVERSION_LIMITS } from "../../src/sandbox/convert-document.js";
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
