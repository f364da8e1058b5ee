// Port of DeerFlow app/gateway/routers/artifacts.py (path resolution, content types, active content served as a
// download) for the local sandbox, and the same read back from DeerFlow's container sandbox.
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { NotFoundError, UpstreamUnavailableError, ValidationError } from "../errors.js";
import type { AioSandbox } from "./aio-sandbox.js";
import type { AioSandboxProvider } from "./aio-provider.js";
import { SandboxServiceError } from "./sandbox.js";
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

/** Maps the file system's "missing" errors to 404 and "not a file" to 422; anything else is rethrown. */
export function artifactError(err: unknown, virtual: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") throw new NotFoundError(`Artifact not found: ${virtual}`);
  if (code === "EISDIR" || code === "EINVAL") throw new ValidationError(`Path is not a file: ${virtual}`);
  throw err;
}

/**
 * Opens a file of the thread's own `user-data` directories for download. Every component is opened relative to
 * the one before it with O_NOFOLLOW (see safe-fs.ts), so a symlink anywhere in the path, even one swapped in by
 * sandboxed code while the request runs, is refused instead of followed.
 * @throws SandboxPathError (403) for refused paths and symlinks; NotFoundError (404); ValidationError (422) for a
 *   directory or anything that is not a regular file.
 */
export async function openArtifact(sandbox: LocalSandbox, rawPath: string): Promise<OpenedArtifact> {
  const virtual = artifactVirtualPath(rawPath);
  const handle = await sandbox.openFile(virtual).catch((err) => artifactError(err, virtual));
  const info = await handle.stat();
  const filename = path.posix.basename(virtual);
  const contentType = contentTypeFor(filename);
  return { handle, size: info.size, filename, contentType, active: !INLINE_SAFE_TYPES.has(contentType.split(";")[0]) };
}

/** An artifact read whole from a remote sandbox: its bytes and the headers' facts (see {@link OpenedArtifact}). */
export interface FetchedArtifact {
  body: Buffer;
  filename: string;
  contentType: string;
  active: boolean;
}

/**
 * Reads a file of the thread's remote sandbox (DeerFlow's container sandbox) for download: the same path forms as
 * {@link openArtifact}, the bytes fetched with the sandbox's download API (at most 100 MiB).
 * @throws SandboxPathError (403) for refused paths; NotFoundError (404); ValidationError (422) for a directory or a
 *   file over the download limit; UpstreamUnavailableError (502) naming the service when it fails.
 */
export async function fetchRemoteArtifact(sandbox: AioSandbox, rawPath: string): Promise<FetchedArtifact> {
  const virtual = artifactVirtualPath(rawPath);
  let body: Buffer;
  try {
    body = await sandbox.downloadFile(virtual);
  } catch (err) {
    if (err instanceof SandboxServiceError) throw new UpstreamUnavailableError(`Could not read the artifact from the sandbox: ${err.message}`);
    if ((err as NodeJS.ErrnoException).code === "EFBIG") throw new ValidationError(`Artifact is too large to download: ${virtual}`);
    return artifactError(err, virtual);
  }
  const filename = path.posix.basename(virtual);
  const contentType = contentTypeFor(filename);
  return { body, filename, contentType, active: !INLINE_SAFE_TYPES.has(contentType.split(";")[0]) };
}

/**
 * The artifact read back from the thread's remote sandbox when the provider is DeerFlow's container sandbox
 * (see {@link fetchRemoteArtifact}); null for a provider whose files are on this host (use {@link openArtifact}).
 * @throws as fetchRemoteArtifact; UpstreamUnavailableError (502) when the sandbox cannot be had.
 */
export async function fetchThreadArtifact(provider: object, threadId: string, userId: string, rawPath: string): Promise<FetchedArtifact | null> {
  if (!("remoteFor" in provider)) return null;
  let sandbox: AioSandbox;
  try {
    sandbox = await (provider as AioSandboxProvider).remoteFor(threadId, userId);
  } catch (err) {
    if (err instanceof SandboxServiceError) throw new UpstreamUnavailableError(`Could not reach the sandbox: ${err.message}`);
    throw err;
  }
  return fetchRemoteArtifact(sandbox, rawPath);
}
