import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseExtensionsConfigText } from "../../src/config/extensions-config.js";
import { MAX_SKILL_FILE_BYTES, SkillStorage } from "../../src/skills/skill-storage.js";
import { checkSkillMarkdown, validateSkillName } from "../../src/skills/validate-skill.js";
import { userSkillMounts } from "../../src/sandbox/mounts.js";

const SKILL = (name: string, description = `About ${name}`, body = "Body.") => `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\n${body}\n`;
const HUMAN = { kind: "human" } as const;
const AGENT = { kind: "agent", threadId: "t-1" } as const;

let dir: string;
let root: string;
let home: string;
const storage = (userId: string) => new SkillStorage({ skillsRoot: root, userId, home });
const put = (file: string, text: string) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "skill-storage-"));
  root = path.join(dir, "skills");
  home = path.join(dir, "home");
  put(path.join(root, "public", "web-search", "SKILL.md"), SKILL("web-search"));
  put(path.join(root, "custom", "shared-notes", "SKILL.md"), SKILL("shared-notes"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("validation (DeerFlow skills/validation.py)", () => {
  it("accepts hyphen-case names up to 64 characters and refuses the rest", () => {
    expect(validateSkillName("  my-skill-2 ")).toBe("my-skill-2");
    for (const bad of ["My-Skill", "my_skill", "-x", "x-", "a--b", "../x", "a/b", "", "x".repeat(65)]) expect(() => validateSkillName(bad), bad).toThrow(/Skill name must/);
  });

  it("checks the front matter as upstream does", () => {
    expect(checkSkillMarkdown(SKILL("ok"))).toEqual({ name: "ok" });
    expect(checkSkillMarkdown("# no front matter")).toEqual({ error: "No YAML frontmatter found" });
    expect(checkSkillMarkdown("---\n- a list\n---\n")).toMatchObject({ error: expect.stringMatching(/not a mapping/) });
    expect(checkSkillMarkdown("---\nname: x\ndescription: y\ncolour: red\n---\n")).toEqual({ error: "Unexpected key(s) in SKILL.md frontmatter: colour" });
    expect(checkSkillMarkdown("---\ndescription: y\n---\n")).toEqual({ error: "Missing 'name' in frontmatter" });
    expect(checkSkillMarkdown("---\nname: x\n---\n")).toEqual({ error: "Missing 'description' in frontmatter" });
    expect(checkSkillMarkdown("---\nname: 12\ndescription: y\n---\n")).toEqual({ error: "Name must be a string, got number" });
    expect(checkSkillMarkdown("---\nname: Big\ndescription: y\n---\n")).toMatchObject({ error: expect.stringMatching(/hyphen-case/) });
    expect(checkSkillMarkdown(`---\nname: x\ndescription: ${"d".repeat(1025)}\n---\n`)).toMatchObject({ error: expect.stringMatching(/Description is too long \(1025/) });
    expect(checkSkillMarkdown("---\nname: x\ndescription: y\nallowed-tools: bash\n---\n")).toMatchObject({ error: expect.stringMatching(/allowed-tools/) });
    expect(checkSkillMarkdown("---\nname: x\ndescription: y\nrequired-secrets: TOKEN\n---\n")).toMatchObject({ error: expect.stringMatching(/required-secrets/) });
    expect(checkSkillMarkdown("---\nname: x\ndescription: y\nsecrets-autonomous: maybe\n---\n")).toMatchObject({ error: expect.stringMatching(/secrets-autonomous/) });
    const yamlError = checkSkillMarkdown("---\nname: x\ndescription: Use when: the user asks\n---\n");
    expect(yamlError).toMatchObject({ error: expect.stringMatching(/^Invalid YAML in frontmatter \(line 3\).*must be quoted/) });
  });
});

describe("SkillStorage", () => {
  it("keeps custom skills per user under DEER_FLOW_HOME/users/<user>/skills/custom", () => {
    storage("alice").create("notes", SKILL("notes", "Alice's"), AGENT);
    expect(readFileSync(path.join(home, "users", "alice", "skills", "custom", "notes", "SKILL.md"), "utf8")).toBe(SKILL("notes", "Alice's"));
    expect(storage("alice").loadSkills(null).map((s) => [s.name, s.category])).toEqual([["notes", "custom"], ["web-search", "public"]]);
    expect(storage("bob").loadSkills(null).map((s) => [s.name, s.category])).toEqual([["shared-notes", "legacy"], ["web-search", "public"]]);
    expect(() => storage("bob").edit("notes", SKILL("notes"), HUMAN)).toThrow("Custom skill 'notes' not found.");
    expect(() => storage("../x")).toThrow(/Invalid user id/);
  });

  it("shows shared custom skills as read-only legacy until the user has their own, and refuses to edit built-ins", () => {
    const s = storage("alice");
    expect(() => s.edit("shared-notes", SKILL("shared-notes"), HUMAN)).toThrow(/legacy shared skill \(not editable\)/);
    expect(() => s.delete("web-search", HUMAN)).toThrow(/is a built-in skill/);
    // Creating one of the same name shadows it.
    s.create("web-search", SKILL("web-search", "My search"), HUMAN);
    const skills = s.loadSkills(null);
    expect(skills.find((k) => k.name === "web-search")).toMatchObject({ category: "custom", description: "My search" });
    expect(skills.some((k) => k.category === "legacy")).toBe(false);
  });

  it("patches exactly expected_count occurrences and keeps the file valid", () => {
    const s = storage("alice");
    s.create("notes", SKILL("notes", "Counts", "a a a"), HUMAN);
    expect(() => s.patch("notes", "a a", "b", 3, AGENT)).toThrow("Expected 3 replacements but found 1.");
    expect(s.patch("notes", " a", " b", 2, AGENT)).toEqual({ applied: 2, found: 2 });
    expect(s.readCustomSkill("notes")).toContain("a b b");
    expect(() => s.patch("notes", "name: notes", "name: other", null, AGENT)).toThrow("Frontmatter name 'other' must match requested skill name 'notes'.");
    expect(() => s.patch("notes", "zzz", "y", null, AGENT)).toThrow("Patch target not found in SKILL.md.");
    expect(s.readHistory("notes").map((e) => [e.action, e.author, e.thread_id])).toEqual([["human_create", "human", null], ["patch", "agent", "t-1"]]);
  });

  it("rolls back edits and deletes from the history, and refuses what it cannot restore", () => {
    const s = storage("alice");
    s.create("notes", SKILL("notes", "v1"), HUMAN);
    s.edit("notes", SKILL("notes", "v2"), HUMAN);
    s.rollback("notes", -1, HUMAN);
    expect(s.readCustomSkill("notes")).toBe(SKILL("notes", "v1"));
    s.delete("notes", AGENT);
    expect(s.customSkillExists("notes")).toBe(false);
    s.rollback("notes", -1, HUMAN);
    expect(s.readCustomSkill("notes")).toBe(SKILL("notes", "v1"));
    const history = s.readHistory("notes");
    expect(history.map((e) => e.action)).toEqual(["human_create", "human_edit", "rollback", "delete", "rollback"]);
    expect(history[2].rollback_from_ts).toBe(history[1].ts);
    expect(() => s.rollback("notes", 0, HUMAN)).toThrow("Selected history entry has no previous content to roll back to");
    expect(() => s.rollback("notes", 99, HUMAN)).toThrow("history_index is out of range");
    expect(() => s.rollback("never", -1, HUMAN)).toThrow("Custom skill 'never' not found");
  });

  it("confines supporting files to references/templates/scripts/assets of the skill, symlinks included", () => {
    const s = storage("alice");
    s.create("notes", SKILL("notes"), HUMAN);
    s.writeSupportFile("notes", "references/a.md", "A", AGENT);
    for (const bad of ["../x.md", "references/../../x.md", "/etc/passwd", "notes.md", "SKILL.md", "references/", "references//a.md", "references\\a.md"]) {
      expect(() => s.writeSupportFile("notes", bad, "x", AGENT), bad).toThrow(/Supporting file/);
    }
    const outside = path.join(dir, "outside");
    mkdirSync(outside);
    symlinkSync(outside, path.join(s.userCustomRoot, "notes", "assets"));
    expect(() => s.writeSupportFile("notes", "assets/evil.md", "x", AGENT)).toThrow("relative_path must resolve within the skill directory.");
    expect(readdirSync(outside)).toEqual([]);
    s.removeSupportFile("notes", "references/a.md", AGENT);
    expect(() => s.removeSupportFile("notes", "references/a.md", AGENT)).toThrow("Supporting file 'references/a.md' not found for skill 'notes'.");
    expect(() => s.rollback("notes", -1, HUMAN)).toThrow("Only SKILL.md changes can be rolled back");
  });

  it("writes atomically (no temp file left) and refuses oversized or invalid content without touching the file", () => {
    const s = storage("alice");
    s.create("notes", SKILL("notes", "v1"), HUMAN);
    expect(() => s.edit("notes", SKILL("notes", "v2", "x".repeat(MAX_SKILL_FILE_BYTES)), HUMAN)).toThrow(/limited to/);
    expect(() => s.edit("notes", "---\nname: notes\n---\n", HUMAN)).toThrow("Missing 'description' in frontmatter");
    expect(() => s.create("notes", SKILL("notes"), HUMAN)).toThrow("Custom skill 'notes' already exists.");
    expect(s.readCustomSkill("notes")).toBe(SKILL("notes", "v1"));
    expect(readdirSync(path.join(s.userCustomRoot, "notes"))).toEqual(["SKILL.md"]);
  });

  it("keeps the enabled state of custom and legacy skills per user, ANDed with extensions_config.json", () => {
    storage("alice").create("notes", SKILL("notes"), HUMAN);
    storage("bob").create("notes", SKILL("notes"), HUMAN);
    storage("alice").setEnabled("notes", false);
    expect(storage("alice").loadSkills(null).find((k) => k.name === "notes")?.enabled).toBe(false);
    expect(storage("bob").loadSkills(null).find((k) => k.name === "notes")?.enabled).toBe(true);
    const off = parseExtensionsConfigText(JSON.stringify({ skills: { notes: { enabled: false } } }), "x.json");
    expect(storage("bob").loadSkills(off).find((k) => k.name === "notes")?.enabled).toBe(false);
    // A corrupt states file reads as "all enabled", with a warning, never an error.
    writeFileSync(path.join(home, "users", "alice", "skills", "_skill_states.json"), "{oops");
    expect(storage("alice").loadSkills(null).find((k) => k.name === "notes")?.enabled).toBe(true);
  });
});

describe("userSkillMounts", () => {
  it("maps the user's own skills at <skills>/custom and the shared ones at <skills>/legacy, read-only", () => {
    const mounts = userSkillMounts(home, "alice", root, "/mnt/skills");
    expect(mounts.map((m) => [m.virtual, m.readOnly])).toEqual([["/mnt/skills/custom", true], ["/mnt/skills/legacy", true]]);
    expect(existsSync(path.join(home, "users", "alice", "skills", "custom"))).toBe(true);
    rmSync(path.join(root, "custom"), { recursive: true });
    expect(userSkillMounts(home, "alice", root, "/mnt/skills").map((m) => m.virtual)).toEqual(["/mnt/skills/custom"]);
  });
});
