import { describe, expect, it } from "vitest";
import { applyPromptTemplate } from "../../src/agents/lead-agent/prompt.js";
import type { Skill } from "../../src/skills/parse-skill.js";
import { getSkillsPromptSection, skillsSectionRenderCount } from "../../src/skills/skills-prompt.js";
import { parseSlashSkillReference, resolveSlashSkill } from "../../src/skills/slash.js";

const mk = (name: string, enabled = true, category = "public", description = `Does ${name} things`): Skill => ({
  name, description, license: null, allowedTools: null, category, relativePath: name, file: `/host/${name}/SKILL.md`, enabled,
});
const section = (skills: Skill[], allowlist: Set<string> | null, extra: object = {}) => getSkillsPromptSection({ skills, allowlist, containerPath: "/mnt/skills", ...extra });

describe("skills section, legacy path (AF-046)", () => {
  const two = [mk("skill1"), mk("skill2")];

  it("is empty when the allowlist matches no enabled skill, or is empty", () => {
    expect(section(two, new Set(["non_existent_skill"]))).toBe("");
    expect(section(two, new Set())).toBe("");
    expect(section([], null)).toBe("");
  });

  it("lists only the allowed skills with their label and container location", () => {
    const s = section(two, new Set(["skill1"]));
    expect(s).toContain("<name>skill1</name>");
    expect(s).toContain("[built-in]");
    expect(s).toContain("<location>/mnt/skills/public/skill1/SKILL.md</location>");
    expect(s).toContain("**Skills are located at:** /mnt/skills");
    expect(s).not.toContain("skill2");
  });

  it("lists every enabled skill without an allowlist, and disabled ones apart", () => {
    const all = section(two, null);
    expect(all).toContain("skill1");
    expect(all).toContain("skill2");
    const mixed = section([mk("skill1"), mk("skill3", false), mk("mine", true, "custom")], null);
    expect(mixed).toContain("<available_skills>");
    expect(mixed).toContain("<disabled_skills>");
    expect(mixed.slice(mixed.indexOf("<disabled_skills>"))).toContain("skill3");
    expect(mixed).toContain("[custom, editable]");
  });

  it("escapes untrusted skill fields", () => {
    const s = section([mk("x", true, "public", "use <b>bold</b> & more")], null);
    expect(s).toContain("use &lt;b&gt;bold&lt;/b&gt; &amp; more");
    expect(s).not.toContain("<b>");
  });
});

describe("skills section cache and deferred index (AF-047)", () => {
  it("renders each distinct content once (LRU by signature) and re-renders when a description changes", () => {
    const skills = [mk("cached-skill-1")];
    const before = skillsSectionRenderCount();
    const first = section(skills, null);
    expect(section([...skills], null)).toBe(first);
    expect(skillsSectionRenderCount()).toBe(before + 1);
    const changed = section([mk("cached-skill-1", true, "public", "new words")], null);
    expect(changed).toContain("new words");
    expect(skillsSectionRenderCount()).toBe(before + 2);
  });

  it("renders a name-only <skill_index> with describe_skill for deferred discovery", () => {
    const s = section([mk("data-analysis"), mk("deep-research")], null, { skillNames: ["deep-research", "data-analysis"] });
    expect(s).toContain("<skill_index>data-analysis, deep-research</skill_index>");
    expect(s).toContain("describe_skill");
    expect(s).not.toContain("<available_skills>");
    expect(s).not.toContain("Does data-analysis things");
    expect(section([mk("a")], null, { skillNames: [] })).toBe("");
  });
});

describe("skill-first reminder (AF-045)", () => {
  it("is tool-agnostic on the legacy path and names describe_skill(name) with deferred discovery", () => {
    const legacy = applyPromptTemplate({});
    expect(legacy).toContain("Always load the relevant skill");
    expect(legacy).not.toContain("describe_skill(name)");
    const deferred = applyPromptTemplate({ skillDiscoveryDeferred: true });
    expect(deferred).toContain("describe_skill(name)");
    expect(deferred).not.toContain("Always load the relevant skill");
  });
});

describe("memory tool guidance (AF-044)", () => {
  it("appears only in memory tool mode, and the prompt never carries a date", () => {
    const tool = applyPromptTemplate({ memoryToolMode: true });
    for (const s of ["<memory_tool_system>", "memory_search", "memory_add"]) expect(tool).toContain(s);
    const middleware = applyPromptTemplate({ memoryToolMode: false });
    expect(middleware).not.toContain("<memory_tool_system>");
    for (const p of [tool, middleware]) expect(p).not.toContain("<current_date>");
  });
});

describe("slash references (AF-064 e)", () => {
  it("parses /name at the start followed by whitespace or the end", () => {
    expect(parseSlashSkillReference("/data-analysis analyze uploads/foo.csv")).toEqual({ name: "data-analysis", rest: "analyze uploads/foo.csv" });
    expect(parseSlashSkillReference("  /deep-research")).toEqual({ name: "deep-research", rest: "" });
    expect(parseSlashSkillReference("/data-analysis\nline two")).toEqual({ name: "data-analysis", rest: "line two" });
  });

  it("rejects invalid names, mid-text references and reserved commands", () => {
    for (const t of ["/DataAnalysis run", "please use /data-analysis", "/data--analysis", "/-x", "/data-analysis,now", "/"]) expect(parseSlashSkillReference(t)).toBeNull();
    expect(resolveSlashSkill("/help x")).toBeNull();
    for (const r of ["bootstrap", "goal", "memory", "models", "new", "status"]) expect(resolveSlashSkill(`/${r}`)).toBeNull();
    expect(resolveSlashSkill("/data-analysis go")?.name).toBe("data-analysis");
  });
});

describe("skill self-evolution guidance (AF-047 c)", () => {
  it("is in the skills section only while skill_evolution is on, also with no skill yet and in the deferred index", () => {
    const on = section([mk("skill1")], null, { skillEvolution: true });
    const off = section([mk("skill1")], null, { skillEvolution: false });
    expect(on).toContain("Skill Self-Evolution");
    expect(on).toContain('skill_manage(action="patch"');
    expect(off).not.toContain("Skill Self-Evolution");
    // Toggling the flag is part of the cache key: the next render follows it.
    expect(section([mk("skill1")], null, { skillEvolution: true })).toBe(on);
    expect(section([], null, { skillEvolution: true })).toContain("Skill Self-Evolution");
    expect(section([], null)).toBe("");
    expect(section([], null, { skillNames: ["skill1"], skillEvolution: true })).toContain("Skill Self-Evolution");
    expect(section([], null, { skillNames: ["skill1"] })).not.toContain("Skill Self-Evolution");
  });
});
