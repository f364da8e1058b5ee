// Builds skills trees for tests: <root>/<category>/<relative path>/SKILL.md.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A new empty skills root. */
export function tempSkillsRoot(): string {
  return mkdtempSync(path.join(tmpdir(), "skills-"));
}

/** Writes a SKILL.md; returns its path. */
export function writeSkill(root: string, rel: string, name: string, description = `${name} skill`, body = `# ${name}\n`, extra = ""): string {
  const dir = path.join(root, rel);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\n${extra}---\n${body}`);
  return file;
}

/** Writes an extensions_config.json; returns its path. */
export function writeExtensions(dir: string, doc: unknown): string {
  const file = path.join(dir, "extensions_config.json");
  writeFileSync(file, JSON.stringify(doc));
  return file;
}
