// Port of DeerFlow skills/storage/local_skill_storage.py (discovery) and skill_storage.py (enabled state).
import { readdirSync, statSync, type Dirent, type Stats } from "node:fs";
import path from "node:path";
import { isSkillEnabled, type ExtensionsConfig } from "../config/extensions-config.js";
import { statSettled } from "../config/watched-file.js";
import { getLogger } from "../logger.js";
import { LRUCache } from "lru-cache";
import { parseSkillFile, SKILL_CATEGORIES, type Skill } from "./parse-skill.js";
import { compareCodePoints } from "../code-point-order.js";

/** Parsed SKILL.md files by path, valid while the file's mtime and size are unchanged (no re-parse per build). */
const parsed = new LRUCache<string, { key: string; skill: Skill | null }>({ max: 512 });

/**
 * Directory listings (sorted by name) by path, reused while the directory's stat is unchanged: adding, removing or
 * renaming an entry moves the directory's mtime and ctime. A listing is kept only once its stat is settled
 * ({@link statSettled}, the rule the config files' reads follow), so that no later change can share its
 * timestamps. Every build lists the skill roots; the stat it takes anyway replaces an open, two reads of the entries
 * and a close.
 */
const listings = new LRUCache<string, { key: string; entries: Dirent[] }>({ max: 512 });

/** Drops the parse and listing caches (tests; the skills API calls it after writing). */
export function invalidateSkillCache(): void {
  parsed.clear();
  listings.clear();
}

/** The entries of `dir` in code-point order of their names; none for a missing directory or a file. */
function listDir(dir: string): Dirent[] {
  try {
    // A missing directory (a user without custom skills) is the common case: no exception for it.
    const st = statSync(dir, { throwIfNoEntry: false });
    if (!st?.isDirectory()) return [];
    const key = `${st.ino}\u0000${st.mtimeMs}\u0000${st.ctimeMs}`;
    const hit = listings.get(dir);
    if (hit?.key === key) return hit.entries;
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => compareCodePoints(a.name, b.name));
    if (statSettled(st)) listings.set(dir, { key, entries });
    else listings.delete(dir);
    return entries;
  } catch {
    return [];
  }
}

/**
 * SKILL.md files under one category root, depth first in name order. Dot-directories are skipped and a
 * directory holding SKILL.md is a package boundary: SKILL.md files nested below it are not skills.
 * @returns `[file, relativePath, version]` entries: `relativePath` `/`-separated from the category root, `version`
 *   the file's `mtimeMs` and size as the walk saw them (so the parse cache needs no second stat).
 */
export function findSkillFiles(categoryRoot: string): SkillFile[] {
  const out: SkillFile[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of listDir(dir)) {
      if (!e.isDirectory() || e.name.startsWith(".")) continue;
      const child = path.join(dir, e.name);
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      const file = path.join(child, "SKILL.md");
      let st: Stats | undefined;
      try {
        st = statSync(file, { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      if (st?.isFile()) out.push([file, childRel, `${st.mtimeMs}\u0000${st.size}`]);
      else walk(child, childRel);
    }
  };
  walk(categoryRoot, "");
  return out;
}

function cachedParse(file: string, category: string, relativePath: string, version?: string): Skill | null {
  let key: string;
  try {
    if (version === undefined) {
      const st = statSync(file);
      version = `${st.mtimeMs}\u0000${st.size}`;
    }
    key = `${category}\u0000${relativePath}\u0000${version}`;
  } catch {
    return null;
  }
  const hit = parsed.get(file);
  if (hit && hit.key === key) return hit.skill ? { ...hit.skill } : null;
  const skill = parseSkillFile(file, { category, relativePath });
  parsed.set(file, { key, skill });
  return skill ? { ...skill } : null;
}

/** A SKILL.md found by {@link findSkillFiles}: `[file, relativePath, version?]` (`version`: `mtimeMs` NUL size). */
export type SkillFile = [file: string, relativePath: string, version?: string];

/** One directory of skills of one category (e.g. `public` at `<skills root>/public`). */
export interface SkillSource {
  category: string;
  root: string;
  /** The root's SKILL.md files when the caller already walked it ({@link findSkillFiles}); walked otherwise. */
  files?: SkillFile[];
}

/**
 * Every valid skill of `sources`, in order: the same `name` twice, the later source wins (custom overrides
 * public). `enabled` comes from `enabledOf`. Sorted by name. Each root is walked on every call (new or removed
 * skills show up at once); each SKILL.md is parsed again only when its mtime or size changes, and an invalid one
 * is logged and skipped (never an error). A missing root gives no skills.
 */
export function loadSkillsFrom(sources: readonly SkillSource[], enabledOf: (skill: Skill) => boolean): Skill[] {
  const byName = new Map<string, Skill>();
  for (const { category, root, files } of sources) {
    for (const [file, rel, version] of files ?? findSkillFiles(root)) {
      const skill = cachedParse(file, category, rel, version);
      if (!skill) continue;
      if (byName.has(skill.name)) getLogger().debug({ skill: skill.name, category }, `skill '${skill.name}' in ${category}/ overrides an earlier one`);
      skill.enabled = enabledOf(skill);
      byName.set(skill.name, skill);
    }
  }
  return [...byName.values()].sort((a, b) => compareCodePoints(a.name, b.name));
}

/**
 * Every valid skill under `skillsRoot` (`public/`, then `custom/`), with `enabled` from the extensions config
 * (an explicit entry wins; otherwise public and custom skills are enabled). The same `name` twice: the later
 * category wins (custom overrides public). Sorted by name. See {@link loadSkillsFrom}. Mirrors DeerFlow
 * `LocalSkillStorage.load_skills`; the lead agent reads a user's view through `SkillStorage.loadSkills` instead.
 * @param extensions The extensions config read for this build; null means every skill is enabled.
 */
export function loadSkills(skillsRoot: string, extensions: ExtensionsConfig | null): Skill[] {
  return loadSkillsFrom(
    SKILL_CATEGORIES.map((category) => ({ category, root: path.join(skillsRoot, category) })),
    (skill) => (extensions ? isSkillEnabled(extensions, skill.name, skill.category) : true),
  );
}

/**
 * The skills an agent may use: enabled ones, filtered by `allowlist` (null = all, empty = none, list = those;
 * unknown names are ignored, as DeerFlow does).
 */
export function filterSkills(skills: readonly Skill[], allowlist: ReadonlySet<string> | null): Skill[] {
  return skills.filter((s) => s.enabled && (allowlist === null || allowlist.has(s.name)));
}

/** The container path of a skill's SKILL.md: `<containerRoot>/<category>/<relativePath>/SKILL.md`. */
export function skillContainerFile(skill: Pick<Skill, "category" | "relativePath">, containerRoot: string): string {
  return `${containerRoot.replace(/\/+$/, "")}/${skill.category}/${skill.relativePath}/SKILL.md`;
}
