// Port of DeerFlow agents/lead_agent/prompt.py (get_skills_prompt_section) and skills/describe.py (skill index).
// The wording is ours; the structure and the cache key follow upstream.
import { escapePromptText } from "../agents/prompt-text.js";
import { LRUCache } from "lru-cache";
import { skillContainerFile } from "./load-skills.js";
import type { Skill } from "./parse-skill.js";

/** Inputs of {@link getSkillsPromptSection}. */
export interface SkillsSectionOptions {
  /** Every discovered skill (enabled and disabled). */
  skills: readonly Skill[];
  /** The agent's allowlist: null = every enabled skill, empty = none. */
  allowlist: ReadonlySet<string> | null;
  /** Container root of the skills (`skills.container_path`, default `/mnt/skills`). */
  containerPath: string;
  /**
   * Deferred discovery (`skills.deferred_discovery`): the names of the skills `describe_skill` serves. When set,
   * the section is a name-only `<skill_index>`; empty gives "".
   */
  skillNames?: readonly string[] | null;
  /** `skill_evolution.enabled`: the section carries the Skill Self-Evolution guidance for `skill_manage`. */
  skillEvolution?: boolean;
}

const LABELS: Record<string, string> = { custom: "[custom, editable]", legacy: "[legacy, read-only]" };

/** Rendered sections by content signature (DeerFlow: `lru_cache(maxsize=32)`). */
const rendered = new LRUCache<string, string>({ max: 32 });
let renders = 0;

/** How many times a section was actually rendered (not served from the cache); for tests. */
export function skillsSectionRenderCount(): number {
  return renders;
}

/** Clears the rendered-section cache. */
export function invalidateSkillsSectionCache(): void {
  rendered.clear();
}

/** DeerFlow `_build_skill_evolution_section` (our wording): when and how to use `skill_manage`. */
const SKILL_EVOLUTION_SECTION = [
  "**Skill Self-Evolution:**",
  "You can create and improve the user's own skills with the `skill_manage` tool. Consider a skill after a task that took many tool calls,",
  "where you overcame a non-obvious pitfall, where the user corrected your approach and the corrected one worked, or that is a recurring workflow.",
  "If a skill you followed missed something, patch it right away.",
  '- `skill_manage(action="create", name="my-skill", content="...")` creates one (SKILL.md text with `name` and `description` front matter)',
  '- `skill_manage(action="patch", name="my-skill", find="...", replace="...")` changes part of its SKILL.md (prefer this to a full edit)',
  '- `skill_manage(action="edit", name="my-skill", content="...")` replaces its SKILL.md',
  '- `skill_manage(action="write_file", name="my-skill", path="references/notes.md", content="...")` adds a supporting file',
  '- `skill_manage(action="delete", name="my-skill")` deletes it',
  "Skills are not deliverables: never write SKILL.md files under /mnt/user-data; the tool stores them for the user.",
  "Ask the user before creating a new skill, and skip simple one-off tasks.",
].join("\n");

function renderIndex(names: readonly string[], evolution: boolean): string {
  const index = [...new Set(names)].sort().map(escapePromptText).join(", ");
  return [
    "<skill_system>",
    "You have skills: folders of instructions, scripts and references for specialised tasks. Only their names are listed here.",
    "When a request may match a skill, call `describe_skill(name)` first: it returns the skill's description and where its SKILL.md is, so you can decide whether to follow it.",
    "A user message that starts with `/<skill-name>` activates that skill explicitly; its instructions are then given to you.",
    ...(evolution ? [SKILL_EVOLUTION_SECTION] : []),
    `<skill_index>${index}</skill_index>`,
    "</skill_system>",
  ].join("\n");
}

function renderFull(enabled: readonly Skill[], disabled: readonly Skill[], containerPath: string, evolution: boolean): string {
  const lines = [
    "<skill_system>",
    "You have skills: folders of instructions, scripts and references for specialised tasks. Load them progressively:",
    "1. When a request matches a skill's description, read its SKILL.md (the <location> below) before you start the work.",
    "2. Follow its instructions; read the other files it mentions only when you need them.",
    "3. A user message that starts with `/<skill-name>` activates that skill explicitly; its instructions are then given to you.",
    "",
    `**Skills are located at:** ${escapePromptText(containerPath)}`,
    "",
    ...(evolution ? [SKILL_EVOLUTION_SECTION, ""] : []),
    "<available_skills>",
  ];
  for (const s of enabled) {
    lines.push(
      "<skill>",
      `<name>${escapePromptText(s.name)}</name>`,
      `<description>${escapePromptText(s.description)} ${LABELS[s.category] ?? "[built-in]"}</description>`,
      `<location>${escapePromptText(skillContainerFile(s, containerPath))}</location>`,
      "</skill>",
    );
  }
  lines.push("</available_skills>");
  if (disabled.length) {
    lines.push("<disabled_skills>", "These skills are installed but disabled; do not use them unless the user enables them:");
    for (const s of disabled) lines.push(`<skill><name>${escapePromptText(s.name)}</name></skill>`);
    lines.push("</disabled_skills>");
  }
  lines.push("</skill_system>");
  return lines.join("\n");
}

const signature = (skills: readonly Skill[], containerPath: string) =>
  skills.map((s) => [s.name, s.description, s.category, skillContainerFile(s, containerPath)]);

/**
 * The `<skill_system>` prompt section. Legacy path (no `skillNames`): "" when no skill exists at all (and
 * self-evolution is off), or when an
 * allowlist is given and no enabled skill is in it; otherwise the progressive-loading guidance, "**Skills are
 * located at:** <container path>", `<available_skills>` (name, description + `[built-in]` / `[custom, editable]`,
 * container location of SKILL.md) and `<disabled_skills>` (disabled skills within the allowlist). Every
 * untrusted field is escaped. Rendering is memoized (LRU, 32 entries) by a content signature: the (name,
 * description, category, location) of the enabled and disabled skills, the sorted allowlist and the container
 * path, so an edited SKILL.md or a toggled skill gives a fresh render and the same content a byte-identical one.
 * With `skillEvolution`, the "Skill Self-Evolution" guidance for `skill_manage` follows the location line (also in
 * the deferred index), the section is rendered even when no skill exists yet, and the flag is part of the cache
 * key. Mirrors DeerFlow `get_skills_prompt_section`.
 */
export function getSkillsPromptSection(options: SkillsSectionOptions): string {
  const { skills, allowlist, containerPath } = options;
  const evolution = Boolean(options.skillEvolution);
  if (options.skillNames) return options.skillNames.length ? renderIndex(options.skillNames, evolution) : "";
  const inAllow = (s: Skill) => allowlist === null || allowlist.has(s.name);
  const enabled = skills.filter((s) => s.enabled && inAllow(s));
  const disabled = skills.filter((s) => !s.enabled && inAllow(s));
  // With self-evolution on, the section (and its skill_manage guidance) is there even before the first skill.
  if (!skills.length && !evolution) return "";
  if (allowlist !== null && !enabled.length) return "";
  const key = JSON.stringify([signature(enabled, containerPath), signature(disabled, containerPath), allowlist ? [...allowlist].sort() : null, containerPath, evolution]);
  const hit = rendered.get(key);
  if (hit !== undefined) return hit;
  renders++;
  const text = renderFull(enabled, disabled, containerPath, evolution);
  rendered.set(key, text);
  return text;
}

/**
 * The skill-first line of `<critical_reminders>`: tool-agnostic ("Always load the relevant skill ...") on the
 * legacy path, naming `describe_skill(name)` with deferred discovery.
 */
export function skillFirstReminder(deferred: boolean): string {
  return deferred
    ? "- Before a task a listed skill may cover, call describe_skill(name) and follow the skill when it applies."
    : "- Always load the relevant skill before starting a task that a skill covers.";
}
