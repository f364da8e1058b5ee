// Port of DeerFlow sandbox/search.py (find_glob_matches, find_grep_matches): tree walks for the glob and grep
// tools, with upstream's ignore list, size and line limits. Glob matching is picomatch's. Sandboxed code can write
// the trees searched, so the walk holds a directory handle per level and opens every entry relative to it with
// O_NOFOLLOW (safe-fs.ts): a directory swapped for a symlink mid-walk is skipped, never followed out of the thread.
import type { Dirent } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import picomatch from "picomatch";
import { openBeneath, openDirBeneath, readdirBeneath } from "./safe-fs.js";
import { compareCodePoints } from "../code-point-order.js";
import { compileLinearRegex, escapeRegexSource } from "../linear-regex.js";

/** Names never descended into or returned (DeerFlow `IGNORE_PATTERNS`). */
export const IGNORE_PATTERNS = [
  ".git", ".svn", ".hg", ".bzr", "node_modules", "__pycache__", ".venv", "venv", ".env", "env", ".tox", ".nox", ".eggs",
  "*.egg-info", "site-packages", "dist", "build", ".next", ".nuxt", ".output", ".turbo", "target", "out", ".idea", ".vscode",
  "*.swp", "*.swo", "*~", ".project", ".classpath", ".settings", ".DS_Store", "Thumbs.db", "desktop.ini", "*.lnk", "*.log",
  "*.tmp", "*.temp", ".upload-*.part", ".write-*.part", "*.bak", "*.cache", ".cache", "logs", ".coverage", "coverage", ".nyc_output",
  "htmlcov", ".pytest_cache", ".mypy_cache", ".ruff_cache",
] as const;
/** Files larger than this (bytes) are not searched by grep (DeerFlow `DEFAULT_MAX_FILE_SIZE_BYTES`). */
export const GREP_MAX_FILE_BYTES = 1_000_000;
/** Matched lines are cut to this many characters (DeerFlow `DEFAULT_LINE_SUMMARY_LENGTH`). */
export const LINE_SUMMARY_LENGTH = 200;

const ignored = picomatch([...IGNORE_PATTERNS], { dot: true });
/** True for a file or directory name the searches skip. */
export const shouldIgnoreName = (name: string): boolean => ignored(name);

/**
 * A glob matcher over `/`-separated paths relative to the search root, read as DeerFlow's `path_matches`
 * (Python `PurePosixPath.match`): a pattern without `/` matches the last component at any depth (`*.py` finds
 * `a/b/c.py`); `**\/x` also matches `x` at the root.
 */
export function globMatcher(pattern: string): (relPath: string) => boolean {
  const full = picomatch(pattern, { dot: true });
  const base = pattern.includes("/") ? null : picomatch(pattern, { dot: true, basename: true });
  const rest = pattern.startsWith("**/") ? picomatch(pattern.slice(3), { dot: true }) : null;
  return (rel) => full(rel) || Boolean(base?.(rel)) || Boolean(rest?.(rel));
}

/**
 * Where a search starts: a directory, or (grep only) a single file, opened by the caller through the sandbox's
 * safe opens, with its host path (for the results' paths). The caller closes the handle.
 */
export type SearchRoot = { kind: "dir" | "file"; handle: FileHandle; hostPath: string };

interface WalkEntry {
  full: string;
  rel: string;
  dir: boolean;
  /** The held directory the entry is in, and its name there: files are opened relative to it. */
  parent: FileHandle;
  name: string;
}

/**
 * Walks the held directory depth-first in name order (each directory's entries, then its subdirectories), skipping
 * ignored names and symlinks; yields files (and dirs when asked). A subdirectory is opened relative to its parent's
 * handle, so one replaced by a symlink meanwhile is skipped; at most one handle per level is open.
 */
async function* walk(dir: FileHandle, host: string, relDir: string, includeDirs: boolean): AsyncGenerator<WalkEntry> {
  let entries: Dirent[];
  try {
    entries = (await readdirBeneath(dir)).sort((a, b) => compareCodePoints(a.name, b.name));
  } catch {
    return; // An unreadable subdirectory is skipped, as os.walk does.
  }
  const subdirs: Dirent[] = [];
  for (const e of entries) {
    if (shouldIgnoreName(e.name) || e.isSymbolicLink()) continue;
    const full = path.join(host, e.name);
    const rel = relDir ? `${relDir}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (includeDirs) yield { full, rel, dir: true, parent: dir, name: e.name };
      subdirs.push(e);
    } else if (e.isFile()) yield { full, rel, dir: false, parent: dir, name: e.name };
  }
  for (const e of subdirs) {
    let sub: FileHandle;
    try {
      sub = await openDirBeneath(dir, [e.name]);
    } catch {
      continue; // Gone, or swapped for a symlink since the listing: not followed.
    }
    try {
      yield* walk(sub, path.join(host, e.name), relDir ? `${relDir}/${e.name}` : e.name, includeDirs);
    } finally {
      await sub.close().catch(() => undefined);
    }
  }
}

/**
 * Host paths under the directory `root` whose root-relative path matches `pattern`, in walk order, at most
 * `maxResults`; `truncated` when more would follow. Mirrors DeerFlow `find_glob_matches`.
 * @throws an ENOTDIR error when `root` is a file.
 */
export async function findGlobMatches(root: SearchRoot, pattern: string, options: { includeDirs?: boolean; maxResults: number }): Promise<{ matches: string[]; truncated: boolean }> {
  if (root.kind !== "dir") throw Object.assign(new Error(`Not a directory: ${root.hostPath}`), { code: "ENOTDIR" });
  const matches: string[] = [];
  const match = globMatcher(pattern);
  for await (const entry of walk(root.handle, root.hostPath, "", options.includeDirs ?? false)) {
    if (!match(entry.rel)) continue;
    if (matches.length >= options.maxResults) return { matches, truncated: true };
    matches.push(entry.full);
  }
  return { matches, truncated: false };
}

/** One grep hit: host path, 1-based line number, the line cut to {@link LINE_SUMMARY_LENGTH}. */
export interface GrepMatch {
  path: string;
  lineNumber: number;
  line: string;
}

/** Options of {@link findGrepMatches}. */
export interface GrepOptions {
  glob?: string | null;
  literal?: boolean;
  caseSensitive?: boolean;
  maxResults: number;
}

const cut = (line: string) => (line.length <= LINE_SUMMARY_LENGTH ? line : `${line.slice(0, LINE_SUMMARY_LENGTH - 3)}...`);

/**
 * Lines matching `pattern` in `root` (a file, or every text file below a directory that passes the `glob`
 * filter). Skipped: files over {@link GREP_MAX_FILE_BYTES}, binary files (a NUL in the first 8 KiB), symlinks,
 * and lines longer than ten times {@link LINE_SUMMARY_LENGTH} (a guard against catastrophic regexes on minified
 * files, as upstream). Case-insensitive unless `caseSensitive`. Mirrors DeerFlow `find_grep_matches`, except that the
 * pattern runs on RE2 (linear time, see {@link compileLinearRegex}): backreferences and lookaround are refused.
 * @throws SyntaxError for an invalid or unsupported regular expression; ENOENT for a missing root.
 */
export async function findGrepMatches(root: SearchRoot, pattern: string, options: GrepOptions): Promise<{ matches: GrepMatch[]; truncated: boolean }> {
  const regex = compileLinearRegex(options.literal ? escapeRegexSource(pattern) : pattern, !options.caseSensitive);
  const filter = options.glob ? globMatcher(options.glob) : null;
  const candidates: AsyncIterable<{ full: string; rel: string; open: () => Promise<FileHandle | null> }> =
    root.kind === "file"
      ? (async function* () {
          yield { full: root.hostPath, rel: path.basename(root.hostPath), open: async () => null };
        })()
      : (async function* () {
          for await (const e of walk(root.handle, root.hostPath, "", false)) yield { full: e.full, rel: e.rel, open: () => openBeneath(e.parent, e.name) };
        })();
  const matches: GrepMatch[] = [];
  const maxLine = LINE_SUMMARY_LENGTH * 10;
  for await (const c of candidates) {
    if (filter && !filter(c.rel)) continue;
    let text: string;
    try {
      // Opened relative to its directory's handle with O_NOFOLLOW|O_NONBLOCK: no symlink, no FIFO hang.
      const opened = await c.open();
      const handle = opened ?? root.handle;
      try {
        const st = await handle.stat();
        if (!st.isFile() || st.size > GREP_MAX_FILE_BYTES) continue;
        const buf = Buffer.alloc(st.size);
        const { bytesRead } = await handle.read(buf, 0, st.size, 0);
        if (buf.subarray(0, 8192).includes(0)) continue;
        text = buf.subarray(0, bytesRead).toString("utf8");
      } finally {
        if (opened) await opened.close();
      }
    } catch {
      continue; // Unreadable files are skipped, as upstream's OSError branch.
    }
    const lines = text.split("\n");
    if (lines.at(-1) === "") lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].replace(/\r$/, "");
      if (line.length > maxLine || !regex.test(line)) continue;
      if (matches.length >= options.maxResults) return { matches, truncated: true };
      matches.push({ path: c.full, lineNumber: i + 1, line: cut(line) });
    }
  }
  return { matches, truncated: false };
}
