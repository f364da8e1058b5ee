// Port of DeerFlow skills/frontmatter.py and skills/parser.py: SKILL.md front matter, parsed with `yaml`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseDocument } from "yaml";
import { getLogger } from "../logger.js";

/** Skill categories this gateway discovers, in override order (a later category wins on a name clash). */
export const SKILL_CATEGORIES = ["public", "custom"] as const;

/** One skill: a directory holding a SKILL.md whose front matter names and describes it. */
export interface Skill {
  /** Front-matter `name` (trimmed). */
  name: string;
  /** Front-matter `description` (trimmed). */
  description: string;
  /** Front-matter `license`, stringified; null when absent or blank. */
  license: string | null;
  /** Front-matter `allowed-tools`: null = no restriction declared, `[]` = no tools. */
  allowedTools: string[] | null;
  /** `public` (built-in) or `custom` (editable). */
  category: string;
  /** Directory of the skill relative to its category root, `/`-separated (e.g. `parent/child-skill`). */
  relativePath: string;
  /** Host path of the SKILL.md file. */
  file: string;
  /** Whether the skill is enabled (extensions_config.json); set by the loader. */
  enabled: boolean;
}

/** Where a front-matter parse failed, for the log. */
export interface FrontMatterError {
  message: string;
  /** 1-based line in the SKILL.md file (front-matter line + 1, the `---` being line 1). */
  line?: number;
  /** The full offending line. */
  text?: string;
  /** A copy-pasteable fix for an unquoted value containing ": ". */
  hint?: string;
}

/** Result of {@link splitFrontMatter}: the YAML text and the body, or null without a front-matter block. */
export function splitFrontMatter(text: string): { yaml: string; body: string } | null {
  const normalized = text.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  if (!normalized.startsWith("---\n")) return null;
  const end = normalized.indexOf("\n---", 3);
  if (end === -1) return null;
  const after = normalized.indexOf("\n", end + 4);
  const closing = normalized.slice(end + 1, after === -1 ? undefined : after);
  if (closing.trim() !== "---") return null;
  return { yaml: normalized.slice(4, end + 1), body: after === -1 ? "" : normalized.slice(after + 1) };
}

/** The quoting hint for `key: value: more`, keeping indentation and escaping `\` and `"`. */
function quotingHint(line: string): string | undefined {
  const m = /^(\s*)([^\s:#][^:#]*?):\s+(.*:.*)$/.exec(line);
  if (!m) return undefined;
  const value = m[3].trim().replace(/\\/g, "\\\\").replace(/"/g, '\\"');
  return `values containing ":" must be quoted, e.g. ${m[1]}${m[2]}: "${value}"`;
}

/**
 * Parses a front-matter YAML block (YAML 1.2 core schema: `yes` stays a string) into a mapping.
 * @returns the mapping, or an error with the SKILL.md line number and, for "nested mapping" errors, a quoting hint.
 */
export function parseFrontMatter(yaml: string): { data: Record<string, unknown> } | { error: FrontMatterError } {
  const doc = parseDocument(yaml);
  if (doc.errors.length) {
    const e = doc.errors[0];
    const yamlLine = e.linePos?.[0]?.line;
    const text = yamlLine ? yaml.split("\n")[yamlLine - 1] : undefined;
    const hint = e.code === "BLOCK_AS_IMPLICIT_KEY" && text ? quotingHint(text) : undefined;
    return { error: { message: e.message.split("\n")[0], line: yamlLine ? yamlLine + 1 : undefined, text, hint } };
  }
  const data = doc.toJS() as unknown;
  if (!data || typeof data !== "object" || Array.isArray(data)) return { error: { message: "front matter is not a mapping" } };
  return { data: data as Record<string, unknown> };
}

const nonBlank = (v: unknown): string | null => (typeof v === "string" && v.trim() ? v.trim() : null);

/**
 * Validates parsed front matter. `name` and `description` must be non-blank strings; `allowed-tools`, when present,
 * a list of non-blank strings (`[]` allowed); `required-secrets`, when present, a list.
 * @returns the skill fields, or the reason the skill is invalid.
 */
export function readSkillFields(data: Record<string, unknown>): { name: string; description: string; license: string | null; allowedTools: string[] | null } | { invalid: string } {
  const name = nonBlank(data.name);
  if (!name) return { invalid: "missing or non-string 'name'" };
  const description = nonBlank(data.description);
  if (!description) return { invalid: "missing or non-string 'description'" };
  let allowedTools: string[] | null = null;
  const raw = data["allowed-tools"];
  if (raw !== undefined && raw !== null) {
    if (!Array.isArray(raw) || raw.some((t) => !nonBlank(t))) return { invalid: "'allowed-tools' must be a list of non-blank strings" };
    allowedTools = raw.map((t) => String(t).trim());
  }
  if (data["required-secrets"] !== undefined && data["required-secrets"] !== null && !Array.isArray(data["required-secrets"])) {
    return { invalid: "'required-secrets' must be a list" };
  }
  const license = data.license === undefined || data.license === null ? null : String(data.license).trim() || null;
  return { name, description, license, allowedTools };
}

/** Where a SKILL.md sits: its category and its directory relative to the category root. */
export interface SkillLocation {
  category: string;
  relativePath: string;
}

/**
 * Parses SKILL.md text. An invalid skill (no front matter, YAML error, non-mapping, missing name/description,
 * bad `allowed-tools`) is logged and gives null; YAML errors are logged as "Invalid YAML front-matter in <file>:
 * line <n>: <line>" plus a quoting hint when the value contains an unquoted ": ". Mirrors DeerFlow `parse_skill_file`.
 * @param file Path used in logs and kept on the skill.
 */
export function parseSkillText(text: string, file: string, location: SkillLocation): Skill | null {
  const log = getLogger();
  const split = splitFrontMatter(text);
  if (!split) {
    log.warn({ file }, `Skipping skill ${file}: SKILL.md does not start with a '---' front-matter block`);
    return null;
  }
  const parsed = parseFrontMatter(split.yaml);
  if ("error" in parsed) {
    const { message, line, text: lineText, hint } = parsed.error;
    const where = line ? ` line ${line}: ${lineText ?? ""}` : "";
    log.error({ file }, `Invalid YAML front-matter in ${file}:${where} (${message})${hint ? `; hint: ${hint}` : ""}`);
    return null;
  }
  const fields = readSkillFields(parsed.data);
  if ("invalid" in fields) {
    log.warn({ file }, `Skipping skill ${file}: ${fields.invalid}`);
    return null;
  }
  return { ...fields, category: location.category, relativePath: location.relativePath, file, enabled: true };
}

/** Reads and parses a SKILL.md file; null (logged) when unreadable or invalid. */
export function parseSkillFile(file: string, location: SkillLocation): Skill | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    getLogger().warn({ file, err: (err as Error).message }, `Skipping skill ${file}: cannot read it`);
    return null;
  }
  return parseSkillText(text, path.resolve(file), location);
}
