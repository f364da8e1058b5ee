// A snapshot of a thread's `/mnt/user-data/{workspace,outputs}` (DeerFlow workspace_changes/scanner.py): per file
// its size, mtime, SHA-256, whether it is binary or sensitive, and (for small text files) its text, so the run's
// changes can be diffed afterwards. Read with fs/promises: the scan must not hold the event loop.
import { createHash } from "node:crypto";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import path from "node:path";
import picomatch from "picomatch";

/** Upstream WorkspaceChangeLimits (counts of files, sizes in bytes). */
export interface WorkspaceChangeLimits {
  max_files: number;
  max_scanned_files: number;
  max_file_bytes_for_diff: number;
  max_total_diff_bytes: number;
}

/** Upstream's defaults: 200 files listed, 2,000 scanned, 256 KiB per diffed file, 1 MiB of diffs in all. */
export const DEFAULT_LIMITS: WorkspaceChangeLimits = { max_files: 200, max_scanned_files: 2000, max_file_bytes_for_diff: 256 * 1024, max_total_diff_bytes: 1024 * 1024 };

/** Why a file's diff is not shown (upstream DiffUnavailableReason). */
export type DiffUnavailableReason = "binary" | "large" | "sensitive" | "truncated" | "symlink";

/** One scanned file (upstream FileSnapshot); `text` only for a text file within the per-file diff limit. */
export interface FileSnapshot {
  root: "workspace" | "outputs";
  size: number;
  mtimeMs: number;
  sha256: string | null;
  binary: boolean;
  sensitive: boolean;
  text: string | null;
  reason: DiffUnavailableReason | null;
  symlinkTarget: string | null;
}

/** Files by virtual path (`/mnt/user-data/outputs/a.md`); `truncated` when the scan stopped at `max_scanned_files`. */
export interface WorkspaceSnapshot {
  files: Map<string, FileSnapshot>;
  truncated: boolean;
}

/** One scanned area: its name, host directory and virtual prefix. */
export interface WorkspaceRoot {
  name: "workspace" | "outputs";
  hostPath: string;
}

/** Directories never scanned: version control, caches, virtual environments (upstream EXCLUDED_DIR_NAMES). */
const EXCLUDED_DIRS = new Set([".git", ".hg", ".svn", ".cache", ".next", ".venv", "node_modules", "__pycache__", "build", "dist", ".mcp", ".browser-frames", ".tool-results"]);
const BINARY_EXTENSIONS = new Set([".7z", ".bin", ".bmp", ".class", ".dll", ".doc", ".docx", ".exe", ".gif", ".gz", ".ico", ".jar", ".jpeg", ".jpg", ".mov", ".mp3", ".mp4", ".o", ".pdf", ".png", ".ppt", ".pptx", ".pyc", ".so", ".tar", ".webp", ".xls", ".xlsx", ".zip"]);
/** Names whose content is never shown (upstream SENSITIVE_PATH_PATTERNS), matched on every path segment. */
const isSensitiveSegment = picomatch([".env", ".env.*", "*api_key*", "*apikey*", "*.key", "*.pem", "*credential*", "*password*", "*private_key*", "*secret*", "*token*"], { dot: true, nocase: true });
/** Bytes sampled for a NUL byte to call a file binary. */
const SAMPLE_BYTES = 4096;

/** Whether a virtual path names a secret-looking file or lies under a secret-looking directory. */
export const isSensitivePath = (virtualPath: string) => virtualPath.split("/").filter(Boolean).some((part) => isSensitiveSegment(part));

/** The two areas of a thread's files that a run's changes cover. */
export const workspaceRoots = (dirs: { workspace_path: string; outputs_path: string }): WorkspaceRoot[] => [
  { name: "workspace", hostPath: dirs.workspace_path },
  { name: "outputs", hostPath: dirs.outputs_path },
];

/** Reads one regular file into its snapshot. */
async function snapshotFile(root: WorkspaceRoot["name"], host: string, virtualPath: string, size: number, mtimeMs: number, limits: WorkspaceChangeLimits): Promise<FileSnapshot> {
  const base: FileSnapshot = { root, size, mtimeMs, sha256: null, binary: BINARY_EXTENSIONS.has(path.extname(host).toLowerCase()), sensitive: isSensitivePath(virtualPath), text: null, reason: null, symlinkTarget: null };
  if (base.sensitive) return { ...base, reason: "sensitive" };
  if (size > limits.max_file_bytes_for_diff) return { ...base, reason: base.binary ? "binary" : "large" };
  const bytes = await readFile(host);
  const binary = base.binary || bytes.subarray(0, SAMPLE_BYTES).includes(0);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return binary ? { ...base, sha256, binary, reason: "binary" } : { ...base, sha256, text: bytes.toString("utf8") };
}

/** One entry's snapshot: a symlink with its target, a regular file read in; null for anything else or a vanished file. */
async function snapshotEntry(root: WorkspaceRoot["name"], host: string, virtualPath: string, limits: WorkspaceChangeLimits): Promise<FileSnapshot | null> {
  const stat = await lstat(host).catch(() => null);
  if (!stat) return null;
  if (stat.isSymbolicLink()) {
    const target = await readlink(host).catch(() => "");
    return { root, size: stat.size, mtimeMs: stat.mtimeMs, sha256: null, binary: false, sensitive: isSensitivePath(virtualPath), text: null, reason: "symlink", symlinkTarget: target };
  }
  return stat.isFile() ? snapshotFile(root, host, virtualPath, stat.size, stat.mtimeMs, limits).catch(() => null) : null;
}

/**
 * Scans `roots` (missing directories are empty) into a snapshot, at most `max_scanned_files` files; symlinks are
 * recorded with their target and never followed. A file that vanishes during the scan is skipped. The files of one
 * directory are read concurrently (a serial scan of 200 small files took about 75 ms; the run waits for it).
 */
export async function scanWorkspace(roots: WorkspaceRoot[], limits: WorkspaceChangeLimits = DEFAULT_LIMITS): Promise<WorkspaceSnapshot> {
  const snapshot: WorkspaceSnapshot = { files: new Map(), truncated: false };
  for (const root of roots) {
    const stack: string[] = [""];
    while (stack.length) {
      const rel = stack.pop()!;
      const entries = await readdir(path.join(root.hostPath, rel), { withFileTypes: true }).catch(() => []);
      const files: string[] = [];
      for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const relPath = rel ? `${rel}/${entry.name}` : entry.name;
        if (!entry.isDirectory()) files.push(relPath);
        else if (!EXCLUDED_DIRS.has(entry.name)) stack.push(relPath);
      }
      const room = limits.max_scanned_files - snapshot.files.size;
      if (files.length > room) snapshot.truncated = true;
      const taken = files.slice(0, Math.max(0, room));
      const scanned = await Promise.all(taken.map((relPath) => snapshotEntry(root.name, path.join(root.hostPath, relPath), `/mnt/user-data/${root.name}/${relPath}`, limits)));
      taken.forEach((relPath, i) => scanned[i] && snapshot.files.set(`/mnt/user-data/${root.name}/${relPath}`, scanned[i]!));
      if (snapshot.truncated) return snapshot;
    }
  }
  return snapshot;
}
