// Custom skills edited from the web app's Settings (DeerFlow skills/storage: custom SKILL.md files, their edit
// history and rollback). Files live under `<skills root>/custom/<name>/SKILL.md`; the history of each skill is a
// JSON-lines file `<skills root>/custom/.history/<name>.jsonl` (a dot-directory, so never taken for a skill).
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../../config/atomic-write.js";
import { BadRequestError, ConflictError, NotFoundError } from "../../errors.js";
import { invalidateSkillCache, loadSkills } from "../../skills/load-skills.js";
import { parseSkillText, type Skill } from "../../skills/parse-skill.js";
import type { ExtensionsConfig } from "../../config/extensions-config.js";

/** Custom skill names: a safe path segment. */
const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** One history entry (upstream `append_history` record). `ts` ISO. */
export interface SkillHistoryEntry {
  ts: string;
  action: "human_create" | "human_edit" | "human_delete" | "rollback";
  author: string;
  thread_id: null;
  file_path: "SKILL.md";
  prev_content: string | null;
  new_content: string | null;
  rollback_from_ts?: string;
}

/** A skill as the Settings list shows it (upstream `SkillResponse`). */
export interface SkillView {
  name: string;
  description: string;
  license: string | null;
  category: string;
  enabled: boolean;
  editable: boolean;
}

/** The API view of a loaded skill: only custom skills are editable. */
export const skillView = (s: Skill): SkillView => ({ name: s.name, description: s.description, license: s.license, category: s.category, enabled: s.enabled, editable: s.category === "custom" });

/** Custom skill files and history under a skills root. */
export class CustomSkillStore {
  constructor(private readonly root: string) {}

  private check(name: string): string {
    const clean = name.replace(/[\r\n]/g, "");
    if (!SKILL_NAME.test(clean)) throw new NotFoundError(`Custom skill '${name}' not found`);
    return clean;
  }

  private dir(name: string) {
    return path.join(this.root, "custom", name);
  }

  private file(name: string) {
    return path.join(this.dir(name), "SKILL.md");
  }

  private historyFile(name: string) {
    return path.join(this.root, "custom", ".history", `${name}.jsonl`);
  }

  /** Every skill (public and custom) with its enabled state. */
  all(extensions: ExtensionsConfig | null): Skill[] {
    return loadSkills(this.root, extensions);
  }

  /** The custom skill `name` with its SKILL.md text. @throws NotFoundError (404). */
  get(name: string, extensions: ExtensionsConfig | null): SkillView & { content: string } {
    const clean = this.check(name);
    const skill = this.all(extensions).find((s) => s.name === clean && s.category === "custom");
    if (!skill) throw new NotFoundError(`Custom skill '${clean}' not found`);
    return { ...skillView(skill), content: readFileSync(skill.file, "utf8") };
  }

  /**
   * Checks that `content` is a valid SKILL.md whose front-matter name is `name`.
   * @throws BadRequestError (400) naming what is wrong.
   */
  validate(name: string, content: string): void {
    const skill = parseSkillText(content, `${name}/SKILL.md`, { category: "custom", relativePath: name });
    if (!skill) throw new BadRequestError("Invalid SKILL.md: it needs a '---' front-matter block with a name and a description");
    if (skill.name !== name) throw new BadRequestError(`Invalid SKILL.md: front-matter name '${skill.name}' does not match the skill '${name}'`);
  }

  private write(name: string, content: string): void {
    mkdirSync(this.dir(name), { recursive: true });
    atomicWriteFile(this.file(name), content);
    invalidateSkillCache();
  }

  private append(name: string, entry: Omit<SkillHistoryEntry, "ts" | "author" | "thread_id" | "file_path">, author: string): void {
    mkdirSync(path.dirname(this.historyFile(name)), { recursive: true });
    const full: SkillHistoryEntry = { ts: new Date().toISOString(), author, thread_id: null, file_path: "SKILL.md", ...entry } as SkillHistoryEntry;
    appendFileSync(this.historyFile(name), `${JSON.stringify(full)}\n`);
  }

  /** Creates a custom skill. @throws ConflictError (409) when it exists; BadRequestError (400) for bad content. */
  create(name: string, content: string, author: string): void {
    const clean = this.check(name);
    if (existsSync(this.file(clean))) throw new ConflictError(`Custom skill '${clean}' already exists`);
    this.validate(clean, content);
    this.write(clean, content);
    this.append(clean, { action: "human_create", prev_content: null, new_content: content }, author);
  }

  /** Replaces a custom skill's SKILL.md and records the edit. @throws NotFoundError; BadRequestError. */
  update(name: string, content: string, author: string): void {
    const clean = this.check(name);
    if (!existsSync(this.file(clean))) throw new NotFoundError(`Custom skill '${clean}' not found`);
    this.validate(clean, content);
    const prev = readFileSync(this.file(clean), "utf8");
    this.write(clean, content);
    this.append(clean, { action: "human_edit", prev_content: prev, new_content: content }, author);
  }

  /** Deletes a custom skill (its history stays, so it can be rolled back). @throws NotFoundError. */
  delete(name: string, author: string): void {
    const clean = this.check(name);
    if (!existsSync(this.file(clean))) throw new NotFoundError(`Custom skill '${clean}' not found`);
    const prev = readFileSync(this.file(clean), "utf8");
    rmSync(this.dir(clean), { recursive: true, force: true });
    invalidateSkillCache();
    this.append(clean, { action: "human_delete", prev_content: prev, new_content: null }, author);
  }

  /** The skill's history, oldest first. @throws NotFoundError when it has neither a file nor a history. */
  history(name: string): SkillHistoryEntry[] {
    const clean = this.check(name);
    if (!existsSync(this.file(clean)) && !existsSync(this.historyFile(clean))) throw new NotFoundError(`Custom skill '${clean}' not found`);
    if (!existsSync(this.historyFile(clean))) return [];
    return readFileSync(this.historyFile(clean), "utf8").split("\n").filter(Boolean).flatMap((line) => {
      try {
        return [JSON.parse(line) as SkillHistoryEntry];
      } catch {
        return [];
      }
    });
  }

  /**
   * Restores the content before history entry `index` (negative counts from the end; default the latest change).
   * @throws BadRequestError (400) for no history, an index out of range, or an entry without previous content.
   */
  rollback(name: string, index: number, author: string): void {
    const clean = this.check(name);
    const entries = this.history(clean);
    if (!entries.length) throw new BadRequestError(`Custom skill '${clean}' has no history`);
    const record = entries[index < 0 ? entries.length + index : index];
    if (!record) throw new BadRequestError("history_index is out of range");
    if (record.prev_content === null) throw new BadRequestError("Selected history entry has no previous content to roll back to");
    this.validate(clean, record.prev_content);
    const current = existsSync(this.file(clean)) ? readFileSync(this.file(clean), "utf8") : null;
    this.write(clean, record.prev_content);
    this.append(clean, { action: "rollback", prev_content: current, new_content: record.prev_content, rollback_from_ts: record.ts }, author);
  }
}
