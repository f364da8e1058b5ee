// readUploadOutline reads an upload's Markdown twin beneath the thread's user-data without following symlinks:
// sandboxed code can replace the twin, or the whole uploads directory, with a link to a file elsewhere.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readUploadOutline } from "../../src/sandbox/upload-outline.js";

let root: string;
let userData: string;
let uploads: string;
let outside: string;

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), "outline-"));
  userData = path.join(root, "user-data");
  uploads = path.join(userData, "uploads");
  outside = path.join(root, "secret");
  mkdirSync(uploads, { recursive: true });
  mkdirSync(outside);
  writeFileSync(path.join(outside, "report.md"), "# Host secret heading\n");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("readUploadOutline", () => {
  it("outlines the Markdown twin of an upload", () => {
    writeFileSync(path.join(uploads, "report.md"), "intro\n# First\ntext\n## Second\n");
    expect(readUploadOutline(uploads, "report.pdf")).toEqual({ outline: [{ title: "First", line: 2 }, { title: "Second", line: 4 }] });
  });

  it("gives the first lines when there are no headings", () => {
    writeFileSync(path.join(uploads, "notes.md"), "one\n\ntwo\n");
    expect(readUploadOutline(uploads, "notes.md")).toEqual({ outline_preview: ["one", "two"] });
  });

  it("does not follow a twin that is a symlink", () => {
    symlinkSync(path.join(outside, "report.md"), path.join(uploads, "report.md"));
    expect(readUploadOutline(uploads, "report.pdf")).toEqual({});
  });

  it("does not follow an uploads directory swapped for a symlink", () => {
    rmSync(uploads, { recursive: true });
    symlinkSync(outside, uploads);
    expect(readUploadOutline(uploads, "report.pdf")).toEqual({});
  });

  it("answers {} for a missing twin or a directory in its place", () => {
    expect(readUploadOutline(uploads, "none.pdf")).toEqual({});
    mkdirSync(path.join(uploads, "dir.md"));
    expect(readUploadOutline(uploads, "dir.pdf")).toEqual({});
  });
});
