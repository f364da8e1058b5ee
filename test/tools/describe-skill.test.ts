import { describe, expect, it } from "vitest";
import type { Skill } from "../../src/skills/parse-skill.js";
import { createDescribeSkillTool } from "../../src/tools/builtins/describe-skill.js";

const skill: Skill = { name: "data-analysis", description: "Analyse <csv> files", license: null, allowedTools: ["bash"], category: "public", relativePath: "data-analysis", file: "/x", enabled: true };

describe("describe_skill (deferred skill discovery)", () => {
  const t = createDescribeSkillTool([skill], "/mnt/skills");

  it("describes a listed skill with its escaped description and container location", async () => {
    const out = String(await t.invoke({ name: "/data-analysis" }));
    expect(out).toContain("<description>Analyse &lt;csv&gt; files</description>");
    expect(out).toContain("<location>/mnt/skills/public/data-analysis/SKILL.md</location>");
    expect(out).toContain("<allowed_tools>bash</allowed_tools>");
  });

  it("names an unknown skill and lists the available ones", async () => {
    expect(String(await t.invoke({ name: "ghost" }))).toBe("Error: Unknown skill 'ghost'. Available skills: data-analysis.");
  });
});
