// Port of DeerFlow skills/storage/user_scoped_skill_storage.py (UserScopedSkillStorage over SkillStorage and
// LocalSkillStorage) plus the write flows its two callers share: the Settings routes (app/gateway/routers/skills.py)
// and the agent's `skill_manage` tool (tools/skill_manage_tool.py). One implementation, so a custom skill written by
// either is read, listed, versioned and rolled back the same way.
//
// Layout (per user, under the runtime home; the global skills root stays read-only):
//   <skills root>/public/<name>/SKILL.md                 built-in, shared
//   <skills root>/custom/<name>/SKILL.md                 legacy shared custom skills (read-only, see below)
//   <home>/users/<user>/skills/custom/<name>/...         the user's custom skills (read-write)
//   <home>/users/<user>/skills/custom/.history/<name>.jsonl   their history, one JSON record a line
//   <home>/users/<user>/skills/_skill_states.json        the user's enabled state of custom / legacy skills
import { appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { atomicWriteFile } from "../config/atomic-write.js";
import { isSkillEnabled, type ExtensionsConfig } from "../config/extensions-config.js";
import { getRuntimeHome, getSkillsRoot, userDir } from "../config/paths.js";
import { BadRequestError, ConflictError, NotFoundError, PayloadTooLargeError } from "../errors.js";
import { getLogger } from "../logger.js";
import { findSkillFiles, invalidateSkillCache, loadSkillsFrom } from "./load-skills.js";
import type { Skill } from "./parse-skill.js";
import { validateSkillMarkdown, validateSkillName } from "./validate-skill.js";

/** The skill's main file. */
export const SKILL_MD_FILE = "SKILL.md";

/** Largest file a custom skill may hold, in bytes (SKILL.md or a supporting file). */
export const MAX_SKILL_FILE_BYTES = 512 * 1024;

/** Top-level directories a supporting file may live in (DeerFlow `_ALLOWED_SUPPORT_SUBDIRS`). */
export const SUPPORT_DIRS: ReadonlySet<string> = new Set(["references", "templates", "scripts", "assets"]);

/** Actions recorded in a skill's history: `human_*` from the Settings routes, the others from `skill_manage`. */
export type SkillHistoryAction = "human_create" | "human_edit" | "human_delete" | "human_install" | "rollback" | "create" | "edit" | "patch" | "delete" | "write_file" | "remove_file";

/** One history record (DeerFlow `append_history`: `ts` ISO 8601 UTC, then the record). */
export interface SkillHistoryEntry {
  ts: string;
  action: SkillHistoryAction;
  /** `human` (Settings) or `agent` (`skill_manage`). */
  author: "human" | "agent";
  /** The thread of the agent run that made the change; null for Settings edits. */
  thread_id: string | null;
  /** The file changed, relative to the skill directory (`SKILL.md`, `references/x.md`). */
  file_path: string;
  prev_content: string | null;
  new_content: string | null;
  rollback_from_ts?: string;
  /** DeerFlow records its moderation verdict here; this gateway has no moderation model (see docs/agents.md). */
  scanner: { decision: "allow"; reason: string };
}

/** Who makes a change: the web app's Settings (a person) or the agent of a run. */
export type SkillActor = { kind: "human" } | { kind: "agent"; threadId: string | null };

/** Where a {@link SkillStorage} reads and writes. */
export interface SkillStorageOptions {
  /** The global skills root (`skills.path` / `DEER_FLOW_SKILLS_DIR`), holding `public/` and legacy `custom/`. */
  skillsRoot: string;
  /** The user whose custom skills these are (the principal's id, or the run context's `user_id`). */
  userId: string;
  /** Runtime home (default `DEER_FLOW_HOME`). */
  home?: string;
}

/**
 * The storage of `userId` for a config's `skills` section (`skills.path` relative to the project root, else
 * `DEER_FLOW_SKILLS_DIR` / `skills/`): what the lead agent, `skill_manage` and the Settings routes all use.
 * @throws Error for a user id that is not a safe path segment.
 */
export function skillStorageFor(skills: { path?: string | null } | undefined, userId: string, home?: string): SkillStorage {
  return new SkillStorage({ skillsRoot: getSkillsRoot(skills), userId, home });
}

const NOT_SCANNED = { decision: "allow", reason: "No moderation model in this gateway; validated only." } as const;

/**
 * A user's view of the skills and the only writer of their custom skills. Reads: public skills from the global
 * root, the user's own custom skills, and, while the user has none, the global `custom/` skills as `legacy`
 * (visible, read-only: DeerFlow's migration fallback). Enabled state: public skills from extensions_config.json;
 * custom and legacy skills from the user's `_skill_states.json` AND the extensions config. Writes are validated
 * (name, front matter, size, confined paths), atomic (temp file + fsync + rename), recorded in the skill's history
 * and visible to the next agent build. Every method is synchronous, so two writes to one skill never interleave
 * within this process (DeerFlow takes a per-(user, skill) lock for the same reason).
 * Errors are domain errors (BadRequestError 400, NotFoundError 404, ConflictError 409, PayloadTooLargeError 413);
 * their messages never name a host path.
 */
export class SkillStorage {
  readonly skillsRoot: string;
  readonly userId: string;
  /** `<home>/users/<user>/skills/custom`. */
  readonly userCustomRoot: string;
  private readonly statesFile: string;

  /** @throws Error for a user id that is not a safe path segment. */
  constructor(options: SkillStorageOptions) {
    this.skillsRoot = options.skillsRoot;
    this.userId = options.userId;
    const skillsDir = path.join(userDir(options.home ?? getRuntimeHome(), options.userId), "skills");
    this.userCustomRoot = path.join(skillsDir, "custom");
    this.statesFile = path.join(skillsDir, "_skill_states.json");
  }

  // ---- reading ----------------------------------------------------------------------------------------------

  /** `<skills root>/custom`: shared custom skills from before per-user storage, shown as `legacy`. */
  get legacyRoot(): string {
    return path.join(this.skillsRoot, "custom");
  }

  /** The user's enabled states of custom / legacy skills; an unreadable file logs a warning and reads as `{}`. */
  private readStates(): Record<string, { enabled?: boolean }> {
    let raw: string;
    try {
      // Most users never toggled a skill: no exception for the missing file on every build.
      if (!statSync(this.statesFile, { throwIfNoEntry: false })) return {};
      raw = readFileSync(this.statesFile, "utf8");
    } catch {
      return {};
    }
    try {
      const data = JSON.parse(raw) as unknown;
      if (data && typeof data === "object" && !Array.isArray(data)) return data as Record<string, { enabled?: boolean }>;
    } catch {
      // fall through to the warning
    }
    getLogger().warn({ user: this.userId }, "skill states file is not a JSON object; every custom skill reads as enabled");
    return {};
  }

  /**
   * Every skill the user sees (public, then their custom or, while they have none, legacy; a custom skill shadows a
   * public one of the same name), sorted by name, each with `enabled`. A bad SKILL.md is logged and skipped.
   * @param extensions The extensions config read for this build; null: public skills are enabled.
   */
  loadSkills(extensions: ExtensionsConfig | null): Skill[] {
    const states = this.readStates();
    // One walk of the user's directory decides between their own skills and the legacy fallback.
    const own = findSkillFiles(this.userCustomRoot);
    return loadSkillsFrom(
      [
        { category: "public", root: path.join(this.skillsRoot, "public") },
        own.length ? { category: "custom", root: this.userCustomRoot, files: own } : { category: "legacy", root: this.legacyRoot },
      ],
      (skill) => {
        const global = extensions ? isSkillEnabled(extensions, skill.name, skill.category) : true;
        return skill.category === "public" ? global : global && states[skill.name]?.enabled !== false;
      },
    );
  }

  /** The user's custom skill `name` (a directory with SKILL.md). */
  customSkillExists(name: string): boolean {
    return isFile(this.skillFile(validateSkillName(name)));
  }

  /** A read-only skill of that name exists: built-in (public) or legacy shared custom. */
  readOnlySkillKind(name: string): "built-in" | "legacy" | null {
    const clean = validateSkillName(name);
    if (isFile(path.join(this.skillsRoot, "public", clean, SKILL_MD_FILE))) return "built-in";
    if (isFile(path.join(this.legacyRoot, clean, SKILL_MD_FILE))) return "legacy";
    return null;
  }

  /**
   * Checks that `name` is one of the user's custom skills (DeerFlow `ensure_custom_skill_is_editable`).
   * @returns the validated name.
   * @throws BadRequestError for a built-in or legacy skill (with how to customise it); NotFoundError otherwise.
   */
  ensureEditable(name: string): string {
    const clean = validateSkillName(name);
    if (this.customSkillExists(clean)) return clean;
    const kind = this.readOnlySkillKind(clean);
    if (kind === "built-in") throw new BadRequestError(`'${clean}' is a built-in skill. Create your own version with the same name to customise it; it will shadow the built-in one.`);
    if (kind === "legacy") throw new BadRequestError(`'${clean}' is a legacy shared skill (not editable). Create your own version with the same name to customise it; it will shadow the shared one.`);
    throw new NotFoundError(`Custom skill '${clean}' not found.`);
  }

  /** SKILL.md text of a custom skill. @throws NotFoundError. */
  readCustomSkill(name: string): string {
    const clean = validateSkillName(name);
    if (!this.customSkillExists(clean)) throw new NotFoundError(`Custom skill '${clean}' not found.`);
    return readFileSync(this.skillFile(clean), "utf8");
  }

  /** The skill's history, oldest first; unreadable lines are skipped. [] when there is none. */
  readHistory(name: string): SkillHistoryEntry[] {
    const file = this.historyFile(validateSkillName(name));
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).flatMap((line) => {
      try {
        return [JSON.parse(line) as SkillHistoryEntry];
      } catch {
        return [];
      }
    });
  }

  /** Whether the skill exists or once did (its history file is there). */
  hasSkillOrHistory(name: string): boolean {
    const clean = validateSkillName(name);
    return this.customSkillExists(clean) || existsSync(this.historyFile(clean));
  }

  // ---- the write flows (Settings routes and skill_manage) -----------------------------------------------------

  /**
   * Creates a custom skill from SKILL.md text. @throws ConflictError when the user already has it;
   * BadRequestError for a bad name or front matter; PayloadTooLargeError over {@link MAX_SKILL_FILE_BYTES}.
   */
  create(name: string, content: string, actor: SkillActor): void {
    const clean = validateSkillName(name);
    if (this.customSkillExists(clean)) throw new ConflictError(`Custom skill '${clean}' already exists.`);
    checkSize(content);
    validateSkillMarkdown(clean, content);
    this.writeFile(clean, SKILL_MD_FILE, content);
    this.recordChange(clean, actor, actor.kind === "human" ? "human_create" : "create", SKILL_MD_FILE, null, content);
  }

  /** Replaces a custom skill's SKILL.md. @throws NotFoundError; BadRequestError (read-only skill, bad content). */
  edit(name: string, content: string, actor: SkillActor): void {
    const clean = this.ensureEditable(name);
    checkSize(content);
    validateSkillMarkdown(clean, content);
    const prev = readFileSync(this.skillFile(clean), "utf8");
    this.writeFile(clean, SKILL_MD_FILE, content);
    this.recordChange(clean, actor, actor.kind === "human" ? "human_edit" : "edit", SKILL_MD_FILE, prev, content);
  }

  /**
   * Replaces `find` with `replace` in SKILL.md: the first occurrence, or exactly `expectedCount` occurrences when
   * given (DeerFlow's patch action). The result must still be a valid SKILL.md.
   * @returns the number of replacements applied and of matches found.
   * @throws BadRequestError "Patch target not found in SKILL.md." / "Expected N replacements but found M.".
   */
  patch(name: string, find: string, replace: string, expectedCount: number | null, actor: SkillActor): { applied: number; found: number } {
    const clean = this.ensureEditable(name);
    if (!find) throw new BadRequestError("find must not be empty.");
    const prev = readFileSync(this.skillFile(clean), "utf8");
    const found = prev.split(find).length - 1;
    if (found === 0) throw new BadRequestError("Patch target not found in SKILL.md.");
    if (expectedCount !== null && found !== expectedCount) throw new BadRequestError(`Expected ${expectedCount} replacements but found ${found}.`);
    const applied = expectedCount ?? 1;
    let next = prev;
    for (let i = 0; i < applied; i++) {
      const at = next.indexOf(find);
      next = next.slice(0, at) + replace + next.slice(at + find.length);
    }
    checkSize(next);
    validateSkillMarkdown(clean, next);
    this.writeFile(clean, SKILL_MD_FILE, next);
    this.recordChange(clean, actor, "patch", SKILL_MD_FILE, prev, next);
    return { applied, found };
  }

  /** Deletes a custom skill (its history stays, so it can be rolled back). @throws NotFoundError; BadRequestError. */
  delete(name: string, actor: SkillActor): void {
    const clean = this.ensureEditable(name);
    const prev = readFileSync(this.skillFile(clean), "utf8");
    // History first: a crash after it leaves a skill whose delete can be retried, never a lost SKILL.md.
    this.recordChange(clean, actor, actor.kind === "human" ? "human_delete" : "delete", SKILL_MD_FILE, prev, null);
    rmSync(this.skillDir(clean), { recursive: true, force: true });
    invalidateSkillCache();
  }

  /**
   * Writes a supporting file under `references/`, `templates/`, `scripts/` or `assets/` of a custom skill.
   * @throws BadRequestError for a path outside those directories; NotFoundError for an unknown skill.
   */
  writeSupportFile(name: string, relativePath: string, content: string, actor: SkillActor): void {
    const clean = this.ensureEditable(name);
    const rel = this.supportPath(relativePath);
    checkSize(content);
    const target = path.join(this.skillDir(clean), rel);
    const prev = isFile(target) ? readFileSync(target, "utf8") : null;
    this.writeFile(clean, rel, content);
    this.recordChange(clean, actor, "write_file", rel, prev, content);
  }

  /** Removes a supporting file. @throws NotFoundError when it does not exist; BadRequestError for a bad path. */
  removeSupportFile(name: string, relativePath: string, actor: SkillActor): void {
    const clean = this.ensureEditable(name);
    const rel = this.supportPath(relativePath);
    const target = path.join(this.skillDir(clean), rel);
    if (!isFile(target)) throw new NotFoundError(`Supporting file '${rel}' not found for skill '${clean}'.`);
    const prev = readFileSync(target, "utf8");
    rmSync(target, { force: true });
    this.recordChange(clean, actor, "remove_file", rel, prev, null);
  }

  /**
   * Restores SKILL.md to the content before history entry `index` (negative counts from the end; -1 = the latest
   * change), also after a delete. Recorded as `rollback` with `rollback_from_ts`.
   * @throws NotFoundError when the skill has neither a file nor a history; BadRequestError for no history, an index
   *   out of range, an entry without previous content (or for a supporting file), or content no longer valid.
   */
  rollback(name: string, index: number, actor: SkillActor): void {
    const clean = validateSkillName(name);
    if (!this.hasSkillOrHistory(clean)) throw new NotFoundError(`Custom skill '${clean}' not found`);
    const entries = this.readHistory(clean);
    if (!entries.length) throw new BadRequestError(`Custom skill '${clean}' has no history`);
    const record = entries[index < 0 ? entries.length + index : index];
    if (!record) throw new BadRequestError("history_index is out of range");
    if (record.file_path !== SKILL_MD_FILE) throw new BadRequestError("Only SKILL.md changes can be rolled back");
    if (record.prev_content === null || record.prev_content === undefined) throw new BadRequestError("Selected history entry has no previous content to roll back to");
    validateSkillMarkdown(clean, record.prev_content);
    const current = isFile(this.skillFile(clean)) ? readFileSync(this.skillFile(clean), "utf8") : null;
    this.writeFile(clean, SKILL_MD_FILE, record.prev_content);
    this.recordChange(clean, actor, "rollback", SKILL_MD_FILE, current, record.prev_content, record.ts);
  }

  /**
   * Enables or disables one of the user's custom or legacy skills (DeerFlow `set_skill_enabled_state`); written
   * atomically to `_skill_states.json`.
   */
  setEnabled(name: string, enabled: boolean): void {
    const states = this.readStates();
    states[name] = { enabled };
    mkdirSync(path.dirname(this.statesFile), { recursive: true });
    atomicWriteFile(this.statesFile, `${JSON.stringify(states, null, 2)}\n`);
  }

  // ---- paths and primitives -----------------------------------------------------------------------------------

  private skillDir(name: string): string {
    return path.join(this.userCustomRoot, name);
  }

  private skillFile(name: string): string {
    return path.join(this.skillDir(name), SKILL_MD_FILE);
  }

  private historyFile(name: string): string {
    return path.join(this.userCustomRoot, ".history", `${name}.jsonl`);
  }

  /**
   * A supporting file path, checked as DeerFlow `ensure_safe_support_path`: relative, with a file name, no `..` or
   * empty segment, under one of {@link SUPPORT_DIRS}, and not `SKILL.md` itself.
   * @returns the normalised relative path (`/`-separated).
   */
  private supportPath(relativePath: unknown): string {
    const rel = typeof relativePath === "string" ? relativePath : "";
    if (!rel || rel.endsWith("/")) throw new BadRequestError("Supporting file path must include a filename.");
    if (rel.startsWith("/") || rel.includes("\\") || /^[A-Za-z]:/.test(rel)) throw new BadRequestError("Supporting file path must be relative.");
    if (/[\u0000-\u001f\u007f]/.test(rel)) throw new BadRequestError("Supporting file path must not contain control characters.");
    const parts = rel.split("/");
    if (parts.some((p) => p === ".." || p === "" || p === ".")) throw new BadRequestError("Supporting file path must not contain parent-directory traversal.");
    if (parts.length < 2 || !SUPPORT_DIRS.has(parts[0])) throw new BadRequestError(`Supporting files must live under one of: ${[...SUPPORT_DIRS].sort().join(", ")}.`);
    return parts.join("/");
  }

  /**
   * Atomically writes `<skill dir>/<rel>` (temp + fsync + rename). The real parent directory must stay inside the
   * real skill directory, so a symlink planted in the tree cannot redirect the write.
   */
  private writeFile(name: string, rel: string, content: string): void {
    const dir = this.skillDir(name);
    const target = path.join(dir, rel);
    mkdirSync(path.dirname(target), { recursive: true });
    const realDir = realpathSync(dir);
    const realParent = realpathSync(path.dirname(target));
    if (realParent !== realDir && !realParent.startsWith(`${realDir}${path.sep}`)) throw new BadRequestError("relative_path must resolve within the skill directory.");
    if (existsSync(target) && lstatSync(target).isSymbolicLink()) throw new BadRequestError("relative_path must resolve within the skill directory.");
    atomicWriteFile(target, content);
    invalidateSkillCache();
  }

  /**
   * Appends one history record (JSON lines; an append of one short line is all-or-nothing in practice). Public
   * for the archive installer (skill-install.ts), which writes the tree itself.
   */
  recordChange(name: string, actor: SkillActor, action: SkillHistoryAction, filePath: string, prev: string | null, next: string | null, rollbackFromTs?: string): void {
    const entry: SkillHistoryEntry = {
      ts: new Date().toISOString(),
      action,
      author: actor.kind,
      thread_id: actor.kind === "agent" ? actor.threadId : null,
      file_path: filePath,
      prev_content: prev,
      new_content: next,
      ...(rollbackFromTs !== undefined ? { rollback_from_ts: rollbackFromTs } : {}),
      scanner: NOT_SCANNED,
    };
    mkdirSync(path.dirname(this.historyFile(name)), { recursive: true });
    appendFileSync(this.historyFile(name), `${JSON.stringify(entry)}\n`);
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function checkSize(content: unknown): void {
  if (typeof content !== "string") throw new BadRequestError("content must be a string.");
  if (Buffer.byteLength(content, "utf8") > MAX_SKILL_FILE_BYTES) throw new PayloadTooLargeError(`Skill files are limited to ${MAX_SKILL_FILE_BYTES} bytes.`);
}
