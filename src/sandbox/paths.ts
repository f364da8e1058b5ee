// Port of DeerFlow's virtual-path rules (config/paths.py VIRTUAL_PATH_PREFIX, sandbox/tools.py
// validate_local_tool_path / _resolve_and_validate_user_data_path), with realpath checks against symlink escapes.
import { lstat, mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import { DeerflowError } from "../errors.js";

/** Where the thread's directories appear to the agent (DeerFlow `VIRTUAL_PATH_PREFIX`). */
export const VIRTUAL_ROOT = "/mnt/user-data";
/** The three per-thread areas under {@link VIRTUAL_ROOT}. */
export const AREAS = ["workspace", "uploads", "outputs"] as const;
/** One of {@link AREAS}. */
export type Area = (typeof AREAS)[number];
/** Longest path accepted, in characters. */
export const MAX_PATH_CHARS = 4096;
/** Longest single path component accepted, in UTF-8 bytes (the usual file-system limit). */
export const MAX_SEGMENT_BYTES = 255;

/** The host directories of one thread: `root` is `.../user-data`, the areas are its children. */
export interface SandboxDirs {
  root: string;
  workspace: string;
  uploads: string;
  outputs: string;
}

/**
 * A path the sandbox refuses: outside the thread's directories, `..`, encoded separators, symlink escapes, too
 * long. Code `forbidden` (HTTP 403); tools turn it into an "Error: ..." result.
 */
export class SandboxPathError extends DeerflowError {
  constructor(message: string) {
    super("forbidden", message);
  }
}

/** A parsed virtual path: `area` null means the user-data root itself; `segments` are below the area. */
export interface VirtualPath {
  area: Area | null;
  segments: string[];
  /** Normalized form, e.g. `/mnt/user-data/outputs/report.md`. */
  virtual: string;
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const ENCODED = /%(2e|2f|5c|00)/i;
const ALLOWED_HINT = `${VIRTUAL_ROOT}/{${AREAS.join(",")}}`;

/**
 * Validates the text of a path before it is touched, in order: non-empty, at most {@link MAX_PATH_CHARS}
 * characters, no control characters, no percent-encoded `.` `/` `\` or NUL, no backslashes, no `..` component,
 * each component at most {@link MAX_SEGMENT_BYTES} bytes.
 * @throws SandboxPathError naming the rule that failed.
 */
export function checkPathText(input: string): void {
  if (typeof input !== "string" || !input.trim()) throw new SandboxPathError("Path is empty");
  if (input.length > MAX_PATH_CHARS) throw new SandboxPathError(`Path is too long (${input.length} characters; the limit is ${MAX_PATH_CHARS})`);
  if (CONTROL.test(input)) throw new SandboxPathError("Path contains control characters");
  if (ENCODED.test(input)) throw new SandboxPathError(`Path contains percent-encoded characters (%2e, %2f, %5c or %00 are not allowed): ${input}`);
  if (input.includes("\\")) throw new SandboxPathError(`Backslashes are not allowed in paths: ${input}`);
  const parts = input.split("/");
  if (parts.includes("..")) throw new SandboxPathError(`Path traversal ('..') is not allowed: ${input}`);
  const long = parts.find((p) => Buffer.byteLength(p) > MAX_SEGMENT_BYTES);
  if (long) throw new SandboxPathError(`Path component is too long (${Buffer.byteLength(long)} bytes; the limit is ${MAX_SEGMENT_BYTES})`);
}

/**
 * Parses an absolute virtual path `/mnt/user-data[/{workspace,uploads,outputs}[/...]]` after {@link checkPathText}.
 * @param options.allowRoot Accept `/mnt/user-data` itself (listing); default false.
 * @throws SandboxPathError for a relative path, a host path or an unknown area.
 */
export function parseVirtualPath(input: string, options: { allowRoot?: boolean } = {}): VirtualPath {
  checkPathText(input);
  if (!input.startsWith("/")) throw new SandboxPathError(`Path must be absolute, under ${ALLOWED_HINT}: ${input}`);
  const parts = input.split("/").filter((p) => p && p !== ".");
  if (parts[0] !== "mnt" || parts[1] !== "user-data") throw new SandboxPathError(`Only paths under ${ALLOWED_HINT} are allowed: ${input}`);
  if (parts.length === 2) {
    if (!options.allowRoot) throw new SandboxPathError(`Path must name a file under ${ALLOWED_HINT}: ${input}`);
    return { area: null, segments: [], virtual: VIRTUAL_ROOT };
  }
  const area = parts[2] as Area;
  if (!AREAS.includes(area)) throw new SandboxPathError(`Only paths under ${ALLOWED_HINT} are allowed: ${input}`);
  const segments = parts.slice(3);
  return { area, segments, virtual: [VIRTUAL_ROOT, area, ...segments].join("/") };
}

/** Host path of a parsed virtual path (lexical; see {@link resolveExisting} / {@link resolveForWrite}). */
export function toHostPath(dirs: SandboxDirs, parsed: VirtualPath): string {
  return parsed.area === null ? dirs.root : path.join(dirs[parsed.area], ...parsed.segments);
}

/** True when `candidate` is `root` or below it (both absolute, already real). */
export function isWithin(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Virtual form of a host path inside `realRoot` (the inverse of {@link toHostPath}). */
export function toVirtualPath(realRoot: string, hostPath: string): string {
  const rel = path.relative(realRoot, hostPath);
  return rel ? `${VIRTUAL_ROOT}/${rel.split(path.sep).join("/")}` : VIRTUAL_ROOT;
}

/**
 * Real path of an existing file or directory, refused unless it stays inside `realRoot` (a symlink pointing
 * elsewhere is an escape).
 * @throws SandboxPathError for an escape; the file system's ENOENT error when it does not exist.
 */
export async function resolveExisting(hostPath: string, realRoot: string, shown: string): Promise<string> {
  const escape = () => new SandboxPathError(`Access denied: ${shown} resolves outside the thread's directories (symlink)`);
  let real: string;
  try {
    real = await realpath(hostPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    // A missing file behind a symlink that leads outside is an escape, not a "not found".
    let probe = path.dirname(hostPath);
    for (;;) {
      const realProbe = await realpath(probe).catch(() => null);
      if (realProbe !== null) {
        if (!isWithin(realRoot, realProbe)) throw escape();
        break;
      }
      if (path.dirname(probe) === probe) break;
      probe = path.dirname(probe);
    }
    throw err;
  }
  if (!isWithin(realRoot, real)) throw escape();
  return real;
}

/**
 * Where a write to `hostPath` lands: the real path of the file when it exists (a symlink is followed only when
 * its target stays inside `realRoot`), else the real path of its deepest existing ancestor joined with the
 * missing components, whose directories are created (and re-checked) first.
 * @throws SandboxPathError for an escape or a path whose parent is a file.
 */
export async function resolveForWrite(hostPath: string, realRoot: string, shown: string): Promise<string> {
  const missing: string[] = [];
  let probe = hostPath;
  for (;;) {
    try {
      await lstat(probe);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      missing.unshift(path.basename(probe));
      const parent = path.dirname(probe);
      if (parent === probe) throw new SandboxPathError(`Access denied: ${shown}`);
      probe = parent;
    }
  }
  const base = await resolveExisting(probe, realRoot, shown);
  if (!missing.length) return base;
  const parentDir = path.join(base, ...missing.slice(0, -1));
  if (missing.length > 1) {
    await mkdir(parentDir, { recursive: true });
    await resolveExisting(parentDir, realRoot, shown);
  } else if (!(await lstat(base)).isDirectory()) {
    throw new SandboxPathError(`Parent of ${shown} is not a directory`);
  }
  return path.join(parentDir, missing.at(-1)!);
}
