// Port of DeerFlow app/gateway/routers/artifacts.py (path resolution, content types, active content served as a
// download) for the local sandbox.
import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { NotFoundError, ValidationError } from "../errors.js";
import type { LocalSandbox } from "./local-sandbox.js";
import { AREAS, checkPathText, VIRTUAL_ROOT } from "./paths.js";

/** Content types by extension; anything else is `application/octet-stream` (text types get `charset=utf-8`). */
export const MIME_TYPES: Readonly<Record<string, string>> = {
  ".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
  ".json": "application/json", ".jsonl": "application/x-ndjson", ".yaml": "application/yaml", ".yml": "application/yaml",
  ".xml": "application/xml", ".log": "text/plain", ".py": "text/x-python", ".js": "text/javascript", ".mjs": "text/javascript",
  ".ts": "text/plain", ".css": "text/css", ".html": "text/html", ".htm": "text/html", ".xhtml": "application/xhtml+xml",
  ".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
  ".webp": "image/webp", ".ico": "image/x-icon", ".pdf": "application/pdf", ".zip": "application/zip",
  ".gz": "application/gzip", ".tar": "application/x-tar", ".mp3": "audio/mpeg", ".wav": "audio/wav", ".mp4": "video/mp4",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};
/**
 * Types safe to show inline: browsers render them without running scripts in the gateway's origin. Everything
 * else (XML, HTML, SVG, JavaScript, unknown types) is sent as an attachment.
 */
export const INLINE_SAFE_TYPES: ReadonlySet<string> = new Set([
  "text/plain", "text/markdown", "text/csv", "text/tab-separated-values", "application/json", "application/x-ndjson", "application/yaml",
  "text/x-python", "image/png", "image/jpeg", "image/gif", "image/webp", "image/x-icon", "application/pdf", "audio/mpeg", "audio/wav", "video/mp4",
]);

/** The `Content-Type` header for a file name. */
export function contentTypeFor(filename: string): string {
  const type = MIME_TYPES[path.extname(filename).toLowerCase()] ?? "application/octet-stream";
  return type.startsWith("text/") || type === "application/json" || type === "application/yaml" ? `${type}; charset=utf-8` : type;
}

/**
 * Maps the artifact route's path to a virtual path: `mnt/user-data/<area>/...` (DeerFlow's form), `<area>/...`
 * (relative to `/mnt/user-data`), or a bare path, taken as relative to `outputs`.
 * @throws SandboxPathError for `..`, encoded separators, control characters, over-long paths.
 */
export function artifactVirtualPath(raw: string): string {
  checkPathText(raw || " ");
  const rel = raw.replace(/^\/+/, "");
  if (rel === "mnt/user-data" || rel.startsWith("mnt/user-data/")) return `/${rel}`;
  const first = rel.split("/")[0];
  return (AREAS as readonly string[]).includes(first) ? `${VIRTUAL_ROOT}/${rel}` : `${VIRTUAL_ROOT}/outputs/${rel}`;
}

/** An opened artifact: the caller streams `handle` and must close it. `size` in bytes. */
export interface OpenedArtifact {
  handle: FileHandle;
  size: number;
  filename: string;
  contentType: string;
  /** True unless the type is in {@link INLINE_SAFE_TYPES}: such content must be sent as an attachment. */
  active: boolean;
}

/**
 * The host path of an artifact's virtual path, for reading (confined to the thread's directories).
 * @throws NotFoundError (404) "Artifact not found: <virtual>" when it (or a parent) does not exist;
 *   SandboxPathError (403) for a refused path.
 */
export async function resolveArtifact(sandbox: LocalSandbox, virtual: string): Promise<string> {
  try {
    return await sandbox.resolve(virtual, "read");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new NotFoundError(`Artifact not found: ${virtual}`);
    throw err;
  }
}

/**
 * Opens a file of the thread's own `user-data` directories for download. The real path must stay inside them
 * (symlinks leading elsewhere are refused) and is opened with O_NOFOLLOW.
 * @throws SandboxPathError (403) for refused paths; NotFoundError (404); ValidationError (422) for a directory.
 */
export async function openArtifact(sandbox: LocalSandbox, rawPath: string): Promise<OpenedArtifact> {
  const virtual = artifactVirtualPath(rawPath);
  const real = await resolveArtifact(sandbox, virtual);
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    throw new ValidationError(`Path is not a file: ${virtual}`);
  }
  const filename = path.basename(real);
  const contentType = contentTypeFor(filename);
  return { handle, size: info.size, filename, contentType, active: !INLINE_SAFE_TYPES.has(contentType.split(";")[0]) };
}
