// Port of DeerFlow skills/tool_policy.py: which tools a set of active skills allows (their `allowed-tools`).
import type { Skill } from "./parse-skill.js";

/**
 * Tools an active skill's `allowed-tools` never removes (upstream's ALWAYS_AVAILABLE_BUILTIN_TOOL_NAMES): reading
 * files and skill metadata, and discovering deferred tools (tool_search results are themselves filtered).
 */
export const ALWAYS_AVAILABLE_TOOL_NAMES: ReadonlySet<string> = new Set(["describe_skill", "read_file", "review_skill_package", "tool_search"]);

/**
 * The union of the `allowed-tools` lists of `skills`, or null (allow all) when none of them declares the key.
 * Once one declares it, a skill without the key contributes no tools (it cannot lift another skill's
 * restriction); `allowed-tools: []` allows nothing of its own.
 */
export function allowedToolNamesForSkills(skills: readonly Pick<Skill, "allowedTools">[]): Set<string> | null {
  let declared = false;
  const allowed = new Set<string>();
  for (const skill of skills) {
    if (skill.allowedTools === null) continue;
    declared = true;
    for (const name of skill.allowedTools) allowed.add(name);
  }
  return declared ? allowed : null;
}
