// Port of DeerFlow skills/slash.py: `/skill-name` activation at the start of a user message.

/** Slash commands that are control commands, never skills. */
export const RESERVED_SLASH_NAMES: ReadonlySet<string> = new Set(["bootstrap", "goal", "help", "memory", "models", "new", "status"]);

const SLASH_RE = /^\/([a-z0-9]+(?:-[a-z0-9]+)*)(?:\s+([\s\S]*))?$/;

/** A parsed `/name rest` reference. */
export interface SlashSkillReference {
  name: string;
  /** The text after the name, trimmed ("" when none). */
  rest: string;
}

/**
 * Parses `/name rest` at the start of `text` (leading whitespace allowed). The name must be lowercase hyphen-case
 * (`[a-z0-9]+(-[a-z0-9]+)*`) followed by whitespace or the end. Returns null for anything else, e.g.
 * `/DataAnalysis run` or `please use /data-analysis`.
 */
export function parseSlashSkillReference(text: string): SlashSkillReference | null {
  const m = SLASH_RE.exec(text.trimStart());
  if (!m) return null;
  return { name: m[1], rest: (m[2] ?? "").trim() };
}

/** Like {@link parseSlashSkillReference}, but null for the reserved control commands (`/help`, `/new`, ...). */
export function resolveSlashSkill(text: string): SlashSkillReference | null {
  const ref = parseSlashSkillReference(text);
  return ref && !RESERVED_SLASH_NAMES.has(ref.name) ? ref : null;
}
