import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseSkillFile, parseSkillText, splitFrontMatter } from "../../src/skills/parse-skill.js";
import { captureLogs } from "../support/capture-logs.js";

const loc = { category: "public", relativePath: "my-skill" };
const skill = (front: string) => parseSkillText(`---\n${front}\n---\n# My Skill\n`, "/x/my-skill/SKILL.md", loc);

describe("SKILL.md front matter (CF-066)", () => {
  it("reads name and description, plain or quoted, with YAML strings taken as written", () => {
    for (const name of ["my-skill", '"my-skill"', "'my-skill'"]) expect(skill(`name: ${name}\ndescription: A test skill`)?.name).toBe("my-skill");
    expect(skill('name: s\ndescription: "Foo: bar"')?.description).toBe("Foo: bar");
  });

  it("folds a `>` description and keeps the category it was given", () => {
    const s = skill("name: s\ndescription: >\n  a folded\n  description");
    expect(s?.description).toContain("folded");
    expect(parseSkillText("---\nname: s\ndescription: d\n---\n", "/f", { category: "custom", relativePath: "team/s" })).toMatchObject({ category: "custom", relativePath: "team/s" });
  });

  it("reads license and allowed-tools: absent null, a list, or [] (no tools)", () => {
    expect(skill("name: s\ndescription: d\nlicense: MIT")?.license).toBe("MIT");
    expect(skill("name: s\ndescription: d")?.allowedTools).toBeNull();
    expect(skill('name: s\ndescription: d\nallowed-tools: ["bash", "read_file"]')?.allowedTools).toEqual(["bash", "read_file"]);
    expect(skill("name: s\ndescription: d\nallowed-tools: []")?.allowedTools).toEqual([]);
  });

  it("rejects a scalar allowed-tools, a missing name or description, no front matter and broken YAML", () => {
    const logs = captureLogs();
    try {
      expect(skill("name: s\ndescription: d\nallowed-tools: bash")).toBeNull();
      expect(skill("description: d")).toBeNull();
      expect(skill("name: s")).toBeNull();
      expect(skill("name: [unclosed\ndescription: d")).toBeNull();
      expect(parseSkillText("# no front matter\n", "/f", loc)).toBeNull();
      expect(parseSkillFile("/definitely/not/here/SKILL.md", loc)).toBeNull();
    } finally {
      logs.restore();
    }
  });

  it("splits the front matter from the body, CRLF included", () => {
    expect(splitFrontMatter("---\r\nname: a\r\n---\r\nbody\r\n")).toEqual({ yaml: "name: a\n", body: "body\n" });
    expect(splitFrontMatter("name: a\n---\n")).toBeNull();
  });
});

describe("front-matter YAML diagnostics (CF-067)", () => {
  const errorFor = (front: string) => {
    const logs = captureLogs();
    try {
      expect(skill(front)).toBeNull();
      return logs.messages().join("\n");
    } finally {
      logs.restore();
    }
  };

  it("names the file line and suggests quoting a value that contains ': '", () => {
    const line = "description: StarRun collector: progress, errors, tables out, plus assorted diagnostic notes";
    const log = errorFor(`name: collect-startrun\n${line}`);
    expect(log).toContain("Invalid YAML front-matter");
    expect(log).toContain(`line 3: ${line}`);
    expect(log).toContain('hint: values containing ":" must be quoted, e.g. description: "StarRun collector: progress, errors, tables out, plus assorted diagnostic notes"');
  });

  it("keeps indentation and escapes backslashes in the hint; gives no hint for other errors", () => {
    expect(errorFor("name: s\ndescription: d\nmetadata:\n  author: Jane: Doe")).toContain('e.g.   author: "Jane: Doe"');
    expect(errorFor("name: s\ndescription: Windows path: C:\\Temp")).toContain('"Windows path: C:\\\\Temp"');
    expect(errorFor("name: s\ndescription: d\nmatch: \\d+ digits: x")).toContain("\\\\d+");
    expect(errorFor("name: [unclosed\ndescription: d")).not.toContain("hint:");
  });
});

describe("parseSkillFile", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "skill-file-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("parses the DeerFlow fixtures' front matter", () => {
    const fixture = path.resolve("test/fixtures/deerflow/skills/bootstrap/SKILL.md");
    const s = parseSkillFile(fixture, { category: "public", relativePath: "bootstrap" });
    expect(s?.name).toBe("bootstrap");
    expect(s?.description).toContain("personalized SOUL.md");
  });

  it("reads a file from disk and records its path", () => {
    mkdirSync(path.join(dir, "x"));
    writeFileSync(path.join(dir, "x", "SKILL.md"), "---\nname: x\ndescription: d\n---\n");
    expect(parseSkillFile(path.join(dir, "x", "SKILL.md"), loc)?.file).toBe(path.join(dir, "x", "SKILL.md"));
  });
});
