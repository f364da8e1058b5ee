// Port of DeerFlow skills/describe.py (describe_skill): the deferred skill-discovery tool.
import { tool } from "langchain";
import { z } from "zod";
import { escapePromptText } from "../../agents/prompt-text.js";
import { skillContainerFile } from "../../skills/load-skills.js";
import type { Skill } from "../../skills/parse-skill.js";

/** Arguments of `describe_skill` (built once: a zod schema compiles its parser per instance). */
const DescribeSkillSchema = z.object({ name: z.string().describe("The skill's name, as listed in <skill_index>") });

/**
 * Creates `describe_skill` over the skills an agent may use (deferred discovery, `skills.deferred_discovery`):
 * for a listed name it returns the skill's name, description, category, allowed tools and the container path of
 * its SKILL.md; an unknown name answers "Error: Unknown skill '<name>'. Available skills: ...".
 * @param skills The enabled skills within the agent's allowlist.
 * @param containerPath Container root of the skills (`skills.container_path`).
 */
export function createDescribeSkillTool(skills: readonly Skill[], containerPath: string) {
  const byName = new Map(skills.map((s) => [s.name, s]));
  return tool(
    async ({ name }) => {
      const skill = byName.get(name.trim().replace(/^\//, ""));
      if (!skill) return `Error: Unknown skill '${name}'. Available skills: ${[...byName.keys()].sort().join(", ") || "(none)"}.`;
      return [
        `<skill name="${escapePromptText(skill.name)}" category="${escapePromptText(skill.category)}">`,
        `<description>${escapePromptText(skill.description)}</description>`,
        `<location>${escapePromptText(skillContainerFile(skill, containerPath))}</location>`,
        skill.allowedTools ? `<allowed_tools>${skill.allowedTools.map(escapePromptText).join(", ")}</allowed_tools>` : "",
        "</skill>",
        "Read the SKILL.md at <location> and follow it when the skill fits the task.",
      ].filter(Boolean).join("\n");
    },
    {
      name: "describe_skill",
      description: "Describe an installed skill by name (from <skill_index>): what it is for and where its SKILL.md is.",
      schema: DescribeSkillSchema,
    },
  );
}
