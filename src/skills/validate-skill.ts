// Port of DeerFlow skills/validation.py (_validate_skill_frontmatter) and SkillStorage.validate_skill_name /
// validate_skill_markdown_content: the rules a custom skill must pass before it is written.
import { BadRequestError } from "../errors.js";
import { parseFrontMatter, splitFrontMatter } from "./parse-skill.js";

/** Skill names: lowercase hyphen-case (DeerFlow `_SKILL_NAME_PATTERN`), at most {@link MAX_SKILL_NAME_LENGTH}. */
const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Longest skill name (DeerFlow: 64). */
export const MAX_SKILL_NAME_LENGTH = 64;

/** Longest skill description, in characters (DeerFlow: 1024). */
export const MAX_SKILL_DESCRIPTION_LENGTH = 1024;

/** Front-matter keys a SKILL.md may carry (DeerFlow `ALLOWED_FRONTMATTER_PROPERTIES`). */
export const ALLOWED_FRONTMATTER_KEYS: ReadonlySet<string> = new Set([
  "name", "description", "license", "allowed-tools", "required-secrets", "secrets-autonomous", "metadata", "compatibility", "version", "author",
]);

/**
 * Trims and validates a skill name (DeerFlow `SkillStorage.validate_skill_name`).
 * @returns the trimmed name.
 * @throws BadRequestError "Skill name must be hyphen-case ..." or "... 64 characters or fewer."
 */
export function validateSkillName(name: unknown): string {
  const trimmed = typeof name === "string" ? name.trim() : "";
  if (!SKILL_NAME.test(trimmed)) throw new BadRequestError("Skill name must be hyphen-case using lowercase letters, digits, and hyphens only.");
  if (trimmed.length > MAX_SKILL_NAME_LENGTH) throw new BadRequestError(`Skill name must be ${MAX_SKILL_NAME_LENGTH} characters or fewer.`);
  return trimmed;
}

/**
 * Why SKILL.md text is not a valid skill, or null when it is. The rules of DeerFlow `_validate_skill_frontmatter`:
 * a `---` front-matter block that parses as a YAML mapping; only {@link ALLOWED_FRONTMATTER_KEYS}; a non-blank
 * hyphen-case `name` of at most 64 characters; a string `description` without `<` or `>`, at most 1024
 * characters; `allowed-tools` a list of non-blank strings; `required-secrets` a list; `secrets-autonomous` a
 * boolean. Messages never name a host path.
 * @returns `{ name }` (the front-matter name) or `{ error }`.
 */
export function checkSkillMarkdown(content: string): { name: string } | { error: string } {
  const split = splitFrontMatter(content);
  if (!split) return { error: "No YAML frontmatter found" };
  const parsed = parseFrontMatter(split.yaml);
  if ("error" in parsed) {
    const { message, line, hint } = parsed.error;
    return { error: `Invalid YAML in frontmatter${line ? ` (line ${line})` : ""}: ${message}${hint ? `; ${hint}` : ""}` };
  }
  const fm = parsed.data;
  const unexpected = Object.keys(fm).filter((k) => !ALLOWED_FRONTMATTER_KEYS.has(k)).sort();
  if (unexpected.length) return { error: `Unexpected key(s) in SKILL.md frontmatter: ${unexpected.join(", ")}` };
  if (!("name" in fm)) return { error: "Missing 'name' in frontmatter" };
  if (!("description" in fm)) return { error: "Missing 'description' in frontmatter" };
  if (typeof fm.name !== "string") return { error: `Name must be a string, got ${fm.name === null ? "null" : typeof fm.name}` };
  const name = fm.name.trim();
  if (!name) return { error: "Name cannot be empty" };
  if (!/^[a-z0-9-]+$/.test(name)) return { error: `Name '${name}' should be hyphen-case (lowercase letters, digits, and hyphens only)` };
  if (name.startsWith("-") || name.endsWith("-") || name.includes("--")) return { error: `Name '${name}' cannot start/end with hyphen or contain consecutive hyphens` };
  if (name.length > MAX_SKILL_NAME_LENGTH) return { error: `Name is too long (${name.length} characters). Maximum is ${MAX_SKILL_NAME_LENGTH} characters.` };
  if (typeof fm.description !== "string") return { error: `Description must be a string, got ${fm.description === null ? "null" : typeof fm.description}` };
  const description = fm.description.trim();
  // The description goes into every prompt inside XML-like tags; upstream refuses angle brackets outright.
  if (/[<>]/.test(description)) return { error: "Description cannot contain angle brackets (< or >)" };
  if (description.length > MAX_SKILL_DESCRIPTION_LENGTH) return { error: `Description is too long (${description.length} characters). Maximum is ${MAX_SKILL_DESCRIPTION_LENGTH} characters.` };
  // The loader skips a skill with a blank description, so a write that would vanish from every listing is refused.
  if (!description) return { error: "Description cannot be empty" };
  const tools = fm["allowed-tools"];
  if (tools !== undefined && tools !== null && (!Array.isArray(tools) || tools.some((t) => typeof t !== "string" || !t.trim()))) {
    return { error: "allowed-tools in SKILL.md must be a list of non-blank strings" };
  }
  const secrets = fm["required-secrets"];
  if (secrets !== undefined && secrets !== null && !Array.isArray(secrets)) return { error: "required-secrets in SKILL.md must be a list" };
  const autonomous = fm["secrets-autonomous"];
  if (autonomous !== undefined && autonomous !== null && typeof autonomous !== "boolean") return { error: "secrets-autonomous in SKILL.md must be a boolean" };
  return { name };
}

/**
 * Validates SKILL.md text for the skill `name`: {@link checkSkillMarkdown}, and the front-matter name must equal
 * `name` (DeerFlow `validate_skill_markdown_content`).
 * @throws BadRequestError naming the problem.
 */
export function validateSkillMarkdown(name: string, content: string): void {
  const result = checkSkillMarkdown(content);
  if ("error" in result) throw new BadRequestError(result.error);
  if (result.name !== name) throw new BadRequestError(`Frontmatter name '${result.name}' must match requested skill name '${name}'.`);
}
