// Port of DeerFlow uploads/manager.py (normalize_filename, staged uploads published atomically, listing, deletion)
// for the local sandbox: files land in the thread's `uploads` directory, seen by the agent as /mnt/user-data/uploads.
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { ConflictError, NotFoundError, PayloadTooLargeError, UpstreamUnavailableError, ValidationError } from "../errors.js";
import type { AioSandboxProvider } from "./aio-provider.js";
import { SandboxServiceError } from "./sandbox.js";
import { TEMP_FILE, type LocalSandbox } from "./local-sandbox.js";
import { checkPathText, MAX_SEGMENT_BYTES, SandboxPathError, VIRTUAL_ROOT } from "./paths.js";
import { lstatBeneath, openBeneath, readdirBeneath, renameBeneath, unlinkBeneath, withHandle } from "./safe-fs.js";

// Document conversion lives in its own module; re-exported so the upload route reaches it through this service.
export { convertUploads } from "./convert-document.js";
import { CONVERTIBLE_EXTENSIONS } from "./convert-document.js";
import { compareCodePoints } from "../code-point-order.js";

/** Upload limits in bytes and files (config `uploads`). */
export interface UploadLimits {
  max_files: number;
  max_file_size: number;
  max_total_size: number;
}

/** One uploaded file as the API reports it (DeerFlow `UploadedFileInfo`). `size` in bytes, `modified` in epoch seconds. */
export interface UploadedFileInfo {
  filename: string;
  size: number;
  /** Virtual path the agent uses. */
  path: string;
  virtual_path: string;
  /** Where the client downloads it (`GET /api/threads/{id}/artifacts/...`). */
  artifact_url: string;
  extension: string | null;
  modified: number;
  /** The name the client sent, when a same-named file of the same request made this one `<stem>_<n><ext>`. */
  original_filename?: string;
}

/**
 * The file name an upload is stored under. Only a bare name is accepted: directory components (`/` or `\`), `..`,
 * percent-encoded separators, control characters, invisible/bidi formatting characters (Unicode Cf) and names over
 * {@link MAX_SEGMENT_BYTES} bytes are refused; surrounding whitespace and leading dots are stripped (`.env` is
 * stored as `env`).
 * @throws ValidationError (422) naming the rule that failed.
 */
export function sanitizeUploadFilename(raw: string): string {
  const shown = JSON.stringify(String(raw ?? "").slice(0, 120));
  if (typeof raw !== "string" || !raw.trim()) throw new ValidationError("Invalid filename: empty");
  if (/[/\\]/.test(raw)) throw new ValidationError(`Invalid filename ${shown}: directory components ('/' or '\\') are not allowed; send a bare file name`);
  try {
    checkPathText(raw);
  } catch (err) {
    throw new ValidationError(`Invalid filename ${shown}: ${(err as Error).message}`);
  }
  // Invisible and direction-changing characters (U+202E, U+200B, ...) let a name pose as another.
  if (/\p{Cf}/u.test(raw)) throw new ValidationError(`Invalid filename ${shown}: invisible or bidirectional formatting characters are not allowed`);
  const name = raw.trim().replace(/^[.\s]+/, "").trim();
  if (!name) throw new ValidationError(`Invalid filename ${shown}: nothing left after removing leading dots and spaces`);
  if (TEMP_FILE.test(`.${name}`) || /^(upload|write)-.*\.part$/.test(name)) throw new ValidationError(`Invalid filename ${shown}: reserved for temporary files`);
  if (Buffer.byteLength(name) > MAX_SEGMENT_BYTES) throw new ValidationError(`Invalid filename: too long (${Buffer.byteLength(name)} bytes; the limit is ${MAX_SEGMENT_BYTES})`);
  return name;
}

/** The API's view of an uploaded file. */
function describe(threadId: string, filename: string, size: number, mtimeMs: number): UploadedFileInfo {
  const virtual = `${VIRTUAL_ROOT}/uploads/${filename}`;
  return {
    filename,
    size,
    path: virtual,
    virtual_path: virtual,
    artifact_url: `/api/threads/${threadId}/artifacts${VIRTUAL_ROOT}/uploads/${encodeURIComponent(filename)}`,
    extension: path.extname(filename).toLowerCase() || null,
    modified: Math.floor(mtimeMs / 1000),
  };
}

/**
 * Opens the thread's uploads directory without following symlinks in any component (safe-fs.ts): every later
 * operation goes through this handle, so swapping the directory for a symlink cannot redirect it. Caller closes.
 * @throws SandboxPathError (403) when it is a symlink; ConflictError (409) when it is missing or not a directory.
 */
async function openUploadsDir(sandbox: LocalSandbox): Promise<FileHandle> {
  try {
    return await sandbox.openDir(`${VIRTUAL_ROOT}/uploads`, "list");
  } catch (err) {
    // Sandboxed code can move the directory away or put a file in its place.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new ConflictError(`${VIRTUAL_ROOT}/uploads is missing or not a directory`);
    throw err;
  }
}

/** Regular files in the thread's uploads directory, sorted by name (temporary files and symlinks skipped). */
export async function listUploads(sandbox: LocalSandbox): Promise<UploadedFileInfo[]> {
  return withHandle(await openUploadsDir(sandbox), async (dir) => {
    const out: UploadedFileInfo[] = [];
    for (const entry of await readdirBeneath(dir)) {
      if (!entry.isFile() || TEMP_FILE.test(entry.name)) continue;
      const info = await lstatBeneath(dir, entry.name).catch(() => null);
      if (info?.isFile()) out.push(describe(sandbox.threadId, entry.name, info.size, info.mtimeMs));
    }
    return out.sort((a, b) => compareCodePoints(a.filename, b.filename));
  });
}

/**
 * Deletes one uploaded file (a symlink is removed itself, never its target).
 * @throws ValidationError for an invalid name (same rules as upload, but nothing is stripped); NotFoundError.
 */
export async function deleteUpload(sandbox: LocalSandbox, filename: string): Promise<void> {
  if (sanitizeUploadFilename(filename) !== filename) throw new ValidationError(`Invalid filename ${JSON.stringify(filename.slice(0, 120))}`);
  await withHandle(await openUploadsDir(sandbox), async (dir) => {
    const info = await lstatBeneath(dir, filename);
    if (!info || info.isDirectory()) throw new NotFoundError(`File not found: ${filename}`);
    await unlinkBeneath(dir, filename);
    // A converted document's Markdown twin goes with it (DeerFlow `delete_file_safe`).
    const ext = path.extname(filename).toLowerCase();
    if (CONVERTIBLE_EXTENSIONS.has(ext)) {
      const twin = `${filename.slice(0, -ext.length)}.md`;
      if ((await lstatBeneath(dir, twin))?.isFile()) await unlinkBeneath(dir, twin);
    }
  });
}

interface Staged {
  filename: string;
  /** The sanitized name the client sent, when {@link claimUniqueFilename} had to change it. */
  originalFilename?: string;
  temp: string;
  size: number;
}

/**
 * A name not yet in `seen` (then added to it): `name` itself, else `<stem>_<n><ext>` with the smallest n >= 1
 * (`report.txt`, `report_1.txt`, `report_2.txt`). Port of DeerFlow `claim_unique_filename` (uploads/manager.py).
 */
export function claimUniqueFilename(name: string, seen: Set<string>): string {
  let candidate = name;
  if (seen.has(candidate)) {
    const ext = path.extname(name);
    const stem = name.slice(0, name.length - ext.length);
    let n = 1;
    do candidate = `${stem}_${n++}${ext}`;
    while (seen.has(candidate));
  }
  seen.add(candidate);
  return candidate;
}

/**
 * One upload request: files of the same name get distinct names ({@link claimUniqueFilename}); each is streamed to a temporary `.upload-<uuid>.part` file in the uploads directory
 * while sizes are counted, and only {@link commit} renames them all into place (so a request that breaks a limit
 * leaves nothing behind, and readers never see half a file). Call {@link abort} on any failure.
 */
export class UploadBatch {
  private staged: Staged[] = [];
  private total = 0;
  /** Names claimed by this request: two parts with the same name are both kept (DeerFlow keeps both too). */
  private readonly seen = new Set<string>();
  /** The uploads directory, opened once (without following symlinks) on the first file; closed by commit/abort. */
  private dir: FileHandle | null = null;

  constructor(
    private readonly sandbox: LocalSandbox,
    private readonly limits: UploadLimits,
  ) {}

  /** Number of files staged so far. */
  get count(): number {
    return this.staged.length;
  }

  /**
   * Streams one file to a temporary file.
   * @throws ValidationError for a bad name; PayloadTooLargeError when the file count, the file size or the total
   *   size exceeds its limit.
   */
  async add(rawName: string, stream: Readable): Promise<void> {
    const original = sanitizeUploadFilename(rawName);
    if (this.staged.length >= this.limits.max_files) throw new PayloadTooLargeError(`Too many files: maximum is ${this.limits.max_files}`);
    const filename = claimUniqueFilename(original, this.seen);
    this.dir ??= await openUploadsDir(this.sandbox);
    const temp = `.upload-${randomUUID()}.part`;
    const handle = await openBeneath(this.dir, temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL);
    const entry: Staged = { filename, temp, size: 0, ...(filename !== original ? { originalFilename: original } : {}) };
    this.staged.push(entry);
    try {
      for await (const chunk of stream) {
        const buf = chunk as Buffer;
        entry.size += buf.length;
        this.total += buf.length;
        if (entry.size > this.limits.max_file_size) throw new PayloadTooLargeError(`File too large: ${filename} (limit ${this.limits.max_file_size} bytes)`);
        if (this.total > this.limits.max_total_size) throw new PayloadTooLargeError(`Total upload size too large (limit ${this.limits.max_total_size} bytes)`);
        await handle.write(buf);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Renames every staged file to its final name (replacing an older upload of the same name, as DeerFlow does).
   * A file renamed because another part of the request had its name carries `original_filename`.
   */
  async commit(): Promise<UploadedFileInfo[]> {
    const dir = this.dir;
    const out: UploadedFileInfo[] = [];
    for (const entry of this.staged) {
      if (!dir) break;
      // Renamed within the held directory: the names are resolved through its descriptor, never by path.
      if ((await lstatBeneath(dir, entry.filename))?.isDirectory()) throw new SandboxPathError(`Cannot replace directory ${entry.filename} in uploads`);
      await renameBeneath(dir, entry.temp, entry.filename);
      entry.temp = "";
      const info = describe(this.sandbox.threadId, entry.filename, entry.size, Date.now());
      out.push(entry.originalFilename ? { ...info, original_filename: entry.originalFilename } : info);
    }
    this.staged = [];
    await this.closeDir();
    return out;
  }

  private async closeDir(): Promise<void> {
    const dir = this.dir;
    this.dir = null;
    await dir?.close().catch(() => undefined);
  }

  /** Removes every temporary file not yet committed. Never throws. */
  async abort(): Promise<void> {
    const dir = this.dir;
    if (dir) await Promise.all(this.staged.filter((e) => e.temp).map((e) => unlinkBeneath(dir, e.temp).catch(() => undefined)));
    this.staged = [];
    await this.closeDir();
  }
}

/**
 * Writes the stored uploads (and their Markdown twins) into DeerFlow's container sandbox, which sees none of this
 * host's files (upstream's upload sync when `thread_data_mounts` is false); nothing for a provider whose files are
 * on this host. The host copy stays either way.
 * @throws UpstreamUnavailableError (502) naming the sandbox service when it fails.
 */
export async function placeUploadsInSandbox(provider: object, threadId: string, userId: string, files: readonly UploadedFileInfo[]): Promise<void> {
  if (!("syncUploads" in provider)) return;
  const paths = files.flatMap((f) => {
    const twin = (f as { markdown_virtual_path?: unknown }).markdown_virtual_path;
    return typeof twin === "string" ? [f.virtual_path, twin] : [f.virtual_path];
  });
  try {
    await (provider as AioSandboxProvider).syncUploads(threadId, userId, paths);
  } catch (err) {
    if (!(err instanceof SandboxServiceError)) throw err;
    throw new UpstreamUnavailableError(`The files were stored, but could not be placed into the sandbox: ${err.message}`);
  }
}
