// Port of DeerFlow skills/installer.py (safe_extract_skill_archive, resolve_skill_dir_from_archive) and
// LocalSkillStorage.ainstall_skill_from_archive: a `.skill` file is a zip of one skill directory, installed into the
// user's custom skills. Every entry is checked from the central directory before a byte is extracted (count,
// declared sizes, paths, symlinks, encryption); the extracted bytes are counted again (a header may lie); the tree
// is staged in a dot-directory beside the target (skill loaders skip dot-directories) and moved into place with one
// rename, so a refusal at any step leaves nothing installed.
import { randomUUID } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import yauzl from "yauzl";
import { BadRequestError, ConflictError } from "../errors.js";
import { invalidateSkillCache } from "./load-skills.js";
import { SKILL_MD_FILE, type SkillStorage } from "./skill-storage.js";
import { checkSkillMarkdown, validateSkillName } from "./validate-skill.js";

/** Limits on one archive (DeerFlow `safe_extract_skill_archive` defaults: 4096 entries, 512 MiB uncompressed). */
export interface SkillArchiveLimits {
  /** Most entries (files and directories) in the archive. */
  maxEntries: number;
  /** Most bytes of all entries together once extracted, declared and actual. */
  maxTotalBytes: number;
}

/** DeerFlow's limits. */
export const SKILL_ARCHIVE_LIMITS: SkillArchiveLimits = { maxEntries: 4096, maxTotalBytes: 512 * 1024 * 1024 };

/** What the install answers (DeerFlow `SkillInstallResponse`). */
export interface SkillInstallResult {
  success: true;
  skill_name: string;
  message: string;
}

/** Where the archive's bytes are: an open file descriptor (kept open; the caller closes it) or a buffer. */
export type SkillArchiveSource = { fd: number } | { buffer: Buffer };

// ELF, PE/DOS and the Mach-O variants (DeerFlow `_EXECUTABLE_MAGIC_PREFIXES`): a skill ships text, not binaries.
const EXECUTABLE_MAGIC = ["7f454c46", "4d5a", "feedface", "feedfacf", "cefaedfe", "cffaedfe", "cafebabe", "bebafeca", "cafebabf", "bfbafeca"];
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * Installs the skill in a `.skill` archive into the user's custom skills and records `human_install` in its
 * history. The archive holds one directory with SKILL.md (or SKILL.md at its root); `__MACOSX` and dotfiles at the
 * top are ignored.
 * @param fileName The archive's file name: it must end in `.skill`.
 * @throws BadRequestError (400) for anything refused: not a `.skill`, not a zip, too many entries, too large
 *   (declared or actual: a zip bomb), an absolute or `..` path, a colon or backslash in a name, a symlink, an
 *   encrypted entry, an executable binary, a duplicate entry, no SKILL.md, invalid front matter, a nested SKILL.md.
 * @throws ConflictError (409) when the user already has a custom skill of that name.
 */
export async function installSkillArchive(storage: SkillStorage, source: SkillArchiveSource, fileName: string, limits: SkillArchiveLimits = SKILL_ARCHIVE_LIMITS): Promise<SkillInstallResult> {
  if (!fileName.endsWith(".skill")) throw new BadRequestError("File must have .skill extension");
  mkdirSync(storage.userCustomRoot, { recursive: true });
  const staging = path.join(storage.userCustomRoot, `.installing-${randomUUID()}`);
  mkdirSync(staging);
  try {
    await extractArchive(source, staging, limits);
    const skillDir = resolveSkillDir(staging);
    const { name, content } = readSkill(skillDir);
    if (storage.customSkillExists(name)) throw new ConflictError(`Skill '${name}' already exists`);
    try {
      renameSync(skillDir, path.join(storage.userCustomRoot, name));
    } catch (err) {
      // Another install of the same name won the race between the check and the rename.
      if (["EEXIST", "ENOTEMPTY"].includes((err as NodeJS.ErrnoException).code ?? "")) throw new ConflictError(`Skill '${name}' already exists`);
      throw err;
    }
    invalidateSkillCache();
    storage.recordChange(name, { kind: "human" }, "human_install", SKILL_MD_FILE, null, content);
    return { success: true, skill_name: name, message: `Skill '${name}' installed successfully` };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Opens the zip lazily with autoClose off: entries are listed first, read after. */
function openZip(source: SkillArchiveSource): Promise<yauzl.ZipFile> {
  const options = { lazyEntries: true, autoClose: false, decodeStrings: true, validateEntrySizes: true };
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, zip?: yauzl.ZipFile) => (err || !zip ? reject(new BadRequestError("File is not a valid ZIP archive")) : resolve(zip));
    if ("fd" in source) yauzl.fromFd(source.fd, options, done);
    else yauzl.fromBuffer(source.buffer, options, done);
  });
}

/** Every entry of the central directory; yauzl's own name checks (absolute, `..`, backslash) become a 400. */
function listEntries(zip: yauzl.ZipFile, limits: SkillArchiveLimits): Promise<yauzl.Entry[]> {
  // Checked before any entry is parsed: a huge member count is cheap to store and slow to walk.
  if (zip.entryCount > limits.maxEntries) throw new BadRequestError(`Skill archive contains too many entries (${zip.entryCount} > ${limits.maxEntries}).`);
  const entries: yauzl.Entry[] = [];
  return new Promise((resolve, reject) => {
    zip.on("entry", (entry: yauzl.Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.on("end", () => resolve(entries));
    zip.on("error", (err: Error) => reject(new BadRequestError(`Archive contains an unsafe or unreadable member: ${err.message}`)));
    zip.readEntry();
  });
}

/** The checks on one entry's metadata (DeerFlow `is_unsafe_zip_member`, `is_symlink_member`). */
function checkEntry(entry: yauzl.Entry): void {
  const name = entry.fileName;
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name) || name.split("/").includes("..")) throw new BadRequestError(`Archive contains unsafe member path: '${name}'`);
  // A colon addresses an NTFS alternate data stream; it has no legitimate use in a member name.
  if (name.includes(":") || name.includes("\\")) throw new BadRequestError(`Archive contains unsafe member path: '${name}'`);
  if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK) throw new BadRequestError(`Archive contains a symbolic link: '${name}'`);
  if (entry.isEncrypted()) throw new BadRequestError(`Archive contains an encrypted member: '${name}'`);
}

/** Lists and checks every entry, then extracts them into `dest`, counting the bytes actually written. */
async function extractArchive(source: SkillArchiveSource, dest: string, limits: SkillArchiveLimits): Promise<void> {
  const zip = await openZip(source);
  try {
    const entries = await listEntries(zip, limits);
    let declared = 0;
    for (const entry of entries) {
      checkEntry(entry);
      declared += entry.uncompressedSize;
    }
    if (declared > limits.maxTotalBytes) throw new BadRequestError("Skill archive is too large or appears highly compressed.");
    const budget = { left: limits.maxTotalBytes };
    for (const entry of entries) await extractEntry(zip, entry, dest, budget);
  } finally {
    // yauzl's close() closes a descriptor it was given; that one belongs to the caller, who closes it.
    if (!("fd" in source)) zip.close();
  }
}

/** Writes one entry under `dest` (a directory entry makes the directory); refuses executables and overruns. */
async function extractEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, dest: string, budget: { left: number }): Promise<void> {
  const target = path.join(dest, ...entry.fileName.split("/").filter(Boolean));
  if (entry.fileName.endsWith("/")) {
    mkdirSync(target, { recursive: true });
    return;
  }
  mkdirSync(path.dirname(target), { recursive: true });
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => zip.openReadStream(entry, (err, s) => (err || !s ? reject(new BadRequestError(`Archive member '${entry.fileName}' cannot be read`)) : resolve(s))));
  let first = true;
  const guard = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      if (first && EXECUTABLE_MAGIC.some((m) => chunk.subarray(0, m.length / 2).toString("hex") === m)) {
        return callback(new BadRequestError(`Archive contains executable binary member: '${entry.fileName}'`));
      }
      first = false;
      budget.left -= chunk.length;
      if (budget.left < 0) return callback(new BadRequestError("Skill archive is too large or appears highly compressed."));
      callback(null, chunk);
    },
  });
  try {
    // "wx": a second entry of the same name is refused, never silently overwritten.
    await pipeline(stream, guard, createWriteStream(target, { flags: "wx" }));
  } catch (err) {
    if (err instanceof BadRequestError) throw err;
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new BadRequestError(`Archive contains a duplicate member: '${entry.fileName}'`);
    // yauzl's size validation: more or fewer bytes than the entry declares.
    throw new BadRequestError(`Archive member '${entry.fileName}' is corrupt: ${(err as Error).message}`);
  }
}

/** DeerFlow `resolve_skill_dir_from_archive`: the one top-level directory, or the root; metadata ignored. */
function resolveSkillDir(root: string): string {
  const items = readdirSync(root).filter((n) => !n.startsWith(".") && n !== "__MACOSX");
  if (!items.length) throw new BadRequestError("Skill archive is empty");
  const only = items.length === 1 ? path.join(root, items[0]) : null;
  return only && statSync(only).isDirectory() ? only : root;
}

/** SKILL.md of the extracted skill, validated as DeerFlow `_validate_skill_frontmatter`; no nested SKILL.md. */
function readSkill(skillDir: string): { name: string; content: string } {
  const file = path.join(skillDir, SKILL_MD_FILE);
  if (!existsSync(file) || !statSync(file).isFile()) throw new BadRequestError(`Invalid skill: ${SKILL_MD_FILE} not found`);
  let content: string;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(file));
  } catch {
    throw new BadRequestError(`Invalid skill: ${SKILL_MD_FILE} must be valid UTF-8`);
  }
  const checked = checkSkillMarkdown(content);
  if ("error" in checked) throw new BadRequestError(`Invalid skill: ${checked.error}`);
  const nested = findNested(skillDir, "");
  if (nested) throw new BadRequestError(`Invalid skill: nested ${SKILL_MD_FILE} is not allowed at ${checked.name}/${nested}`);
  return { name: validateSkillName(checked.name), content };
}

/** The relative path of a SKILL.md below the skill's top level, or null. */
function findNested(dir: string, rel: string): string | null {
  for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const child = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      const found = findNested(dir, child);
      if (found) return found;
    } else if (rel && e.name === SKILL_MD_FILE) return child;
  }
  return null;
}
