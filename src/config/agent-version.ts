// One agent's config.yaml + SOUL.md replaced as a pair: both files live in a version directory and one symlink
// names the current version, so swapping that symlink (one rename) is the only step that changes what is read.
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { fsyncDir } from "./atomic-write.js";

/**
 * Layout of an agent directory once it has been updated (DeerFlow readers that open `<name>/config.yaml` follow
 * the links):
 * ```
 * <name>/config.yaml -> .versions/current/config.yaml
 * <name>/SOUL.md     -> .versions/current/SOUL.md
 * <name>/.versions/current -> <12 hex>          (the one pointer an update swaps)
 * <name>/.versions/<12 hex>/{config.yaml,SOUL.md}
 * ```
 * Anything else in `<name>/` (memory data) is not touched.
 */
export const VERSIONS_DIR = ".versions";
/** Name of the pointer symlink inside {@link VERSIONS_DIR}. */
export const CURRENT_LINK = "current";
/** A version directory's name. */
export const VERSION_NAME = /^[0-9a-f]{12}$/;
/** A pointer being swapped in (`.current.<12 hex>.tmp`): the same shape as `atomicWriteFile`'s temp files. */
export const POINTER_TEMP = /^\.current\.[0-9a-f]{12}\.tmp$/;

/** The two files an agent update replaces together, by name. */
export const PAIR_FILES = ["config.yaml", "SOUL.md"] as const;

/** The content of an agent's pair. */
export interface AgentPair {
  config: string;
  soul: string;
}

const hex = () => randomBytes(6).toString("hex");

function writeDurable(file: string, content: string): void {
  const fd = openSync(file, "wx", 0o644);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Replaces (or creates) the symlink `link` with one to `target`, atomically (temp link + rename). */
function swapLink(link: string, target: string, tempName: string): void {
  const temp = path.join(path.dirname(link), tempName);
  symlinkSync(target, temp);
  try {
    renameSync(temp, link);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  fsyncDir(path.dirname(link));
}

/** Writes a new version directory holding `pair`; returns its name. Nothing points at it yet. */
function writeVersion(versions: string, pair: AgentPair): string {
  const name = hex();
  const dir = path.join(versions, name);
  mkdirSync(dir);
  writeDurable(path.join(dir, "config.yaml"), pair.config);
  writeDurable(path.join(dir, "SOUL.md"), pair.soul);
  fsyncDir(dir);
  fsyncDir(versions);
  return name;
}

/** The version `current` names, or null when there is no (valid) pointer. */
function currentVersion(versions: string): string | null {
  try {
    const target = readlinkSync(path.join(versions, CURRENT_LINK));
    return VERSION_NAME.test(target) ? target : null;
  } catch {
    return null;
  }
}

/** Whether both pair files of `dir` are the links into the current version (the layout above). */
function isLinked(dir: string): boolean {
  return PAIR_FILES.every((f) => {
    try {
      return lstatSync(path.join(dir, f)).isSymbolicLink() && readlinkSync(path.join(dir, f)) === path.join(VERSIONS_DIR, CURRENT_LINK, f);
    } catch {
      return false;
    }
  });
}

const readOr = (file: string, fallback: string): string => {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return fallback;
    throw err;
  }
};

/**
 * The agent's pair as it reads now: from one version directory when the layout is linked (so a concurrent update
 * cannot mix two versions), else the two plain files. A missing SOUL.md reads as `""`.
 * @throws the fs error of an unreadable config.yaml (ENOENT when the agent has none).
 */
export function readAgentPair(dir: string): AgentPair {
  for (let attempt = 0; attempt < 3; attempt++) {
    const version = isLinked(dir) ? currentVersion(path.join(dir, VERSIONS_DIR)) : null;
    const base = version ? path.join(dir, VERSIONS_DIR, version) : dir;
    try {
      // A version directory always holds both files: a missing SOUL.md there means the version was just removed
      // (retry with the new pointer), never "no soul".
      const config = readFileSync(path.join(base, "config.yaml"), "utf8");
      return { config, soul: version ? readFileSync(path.join(base, "SOUL.md"), "utf8") : readOr(path.join(base, "SOUL.md"), "") };
    } catch (err) {
      // The version was replaced and removed between the pointer read and the file reads: read the new one.
      if (!version || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  return { config: readFileSync(path.join(dir, "config.yaml"), "utf8"), soul: readOr(path.join(dir, "SOUL.md"), "") };
}

/**
 * Brings `dir` to the linked layout without changing what it reads: the current files are copied into a first
 * version, the pointer is set, then each plain file is replaced by its link, one rename each. Every state between
 * shows the same pair, so a crash anywhere here tears nothing. A no-op when already linked.
 */
function ensureLinked(dir: string): void {
  const versions = path.join(dir, VERSIONS_DIR);
  if (isLinked(dir) && currentVersion(versions)) return;
  const pair = readAgentPair(dir);
  mkdirSync(versions, { recursive: true });
  const first = writeVersion(versions, pair);
  swapLink(path.join(versions, CURRENT_LINK), first, `.current.${hex()}.tmp`);
  for (const f of PAIR_FILES) swapLink(path.join(dir, f), path.join(VERSIONS_DIR, CURRENT_LINK, f), `.${f}.${hex()}.tmp`);
}

/**
 * Replaces an existing agent's config.yaml and SOUL.md as one atomic change: a crash at any point leaves readers
 * the old pair or the new one, never one file of each. The new pair is written to a fresh version directory, then
 * the `current` pointer is swapped by one rename; the version it replaced is removed afterwards (a crash before
 * that leaves it for the start-up sweep). Callers serialize updates of one agent.
 * @param dir The agent directory (it has a config.yaml). @throws the underlying fs error; what is read is unchanged.
 */
export function replaceAgentPair(dir: string, pair: AgentPair): void {
  ensureLinked(dir);
  const versions = path.join(dir, VERSIONS_DIR);
  const previous = currentVersion(versions);
  const next = writeVersion(versions, pair);
  try {
    swapLink(path.join(versions, CURRENT_LINK), next, `.current.${hex()}.tmp`);
  } catch (err) {
    rmSync(path.join(versions, next), { recursive: true, force: true });
    throw err;
  }
  // Only the version this update replaced: another process's version in progress is never someone's `previous`.
  if (previous && previous !== next) rmSync(path.join(versions, previous), { recursive: true, force: true });
}

/**
 * What a crash left in `<agent dir>/.versions`: version directories the pointer does not name and pointer temp
 * links. Returns their paths (the caller applies its age rule and removes them).
 */
export function strayVersionEntries(dir: string): string[] {
  const versions = path.join(dir, VERSIONS_DIR);
  let names: string[];
  try {
    names = readdirSync(versions);
  } catch {
    return [];
  }
  const current = currentVersion(versions);
  // Without a valid pointer nothing is removed: the links may still resolve through a version a person restores.
  if (!current) return [];
  return names.filter((n) => (VERSION_NAME.test(n) && n !== current) || POINTER_TEMP.test(n)).map((n) => path.join(versions, n));
}
