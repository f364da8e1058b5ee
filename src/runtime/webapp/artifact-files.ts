// Artifact save and ranged reads (DeerFlow app/gateway/routers/artifacts.py `update_artifact`, FileResponse's
// Range handling): the web app's artifact editor saves UTF-8 text under `/mnt/user-data/outputs` with the SHA-256
// it loaded (412 when the file changed since), and its previews read the first MiB with `Range` and take the
// file's SHA-256 from a strong `ETag`.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { BadRequestError, NotFoundError, PayloadTooLargeError, PreconditionFailedError, UnsupportedMediaTypeError } from "../../errors.js";
import { artifactError, artifactVirtualPath } from "../../sandbox/artifacts.js";
import { lstatBeneath, openBeneath, withHandle } from "../../sandbox/safe-fs.js";
import type { LocalSandbox } from "../../sandbox/local-sandbox.js";
import { VIRTUAL_ROOT } from "../../sandbox/paths.js";

/** Upstream MAX_EDITABLE_ARTIFACT_BYTES: the largest artifact the editor may load and save (2 MiB). */
export const MAX_EDITABLE_ARTIFACT_BYTES = 2 * 1024 * 1024;
/** Files up to this size (bytes) get a strong SHA-256 ETag; larger ones a weak size+mtime tag (no full read). */
export const STRONG_ETAG_MAX_BYTES = 32 * 1024 * 1024;

/** The `PUT` answer (upstream `ArtifactUpdateResponse`): virtual path, new SHA-256 (hex), size in bytes. */
export interface ArtifactUpdate {
  path: string;
  sha256: string;
  size: number;
}

const sha256Hex = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

/**
 * Replaces an existing UTF-8 text file under `/mnt/user-data/outputs` if its current SHA-256 is `expectedSha256`.
 * The write is atomic (temp file + rename in the same directory).
 * @throws BadRequestError (400) outside outputs; NotFoundError (404) for a missing file; UnsupportedMediaTypeError
 *   (415) for symlinks, `.skill` archives, binary or non-UTF-8 content; PayloadTooLargeError (413) over 2 MiB;
 *   PreconditionFailedError (412) when the file changed; SandboxPathError (403) for traversal.
 */
export async function saveArtifact(sandbox: LocalSandbox, rawPath: string, content: string, expectedSha256: string): Promise<ArtifactUpdate> {
  const virtual = artifactVirtualPath(rawPath);
  if (!virtual.startsWith(`${VIRTUAL_ROOT}/outputs/`)) throw new BadRequestError("Only files in /mnt/user-data/outputs can be edited");
  if (virtual.includes(".skill/") || virtual.endsWith(".skill")) throw new UnsupportedMediaTypeError("Skill archives cannot be edited in the artifacts panel");
  // Read through handles that never follow a symlink (safe-fs.ts): what is hashed is the file the save replaces.
  const { dir, name } = await sandbox.openParent(virtual, "read").catch((err) => artifactError(err, virtual));
  const current = await withHandle(dir, async (d) => {
    const info = await lstatBeneath(d, name);
    if (!info) throw new NotFoundError(`Artifact not found: ${virtual}`);
    if (info.isSymbolicLink()) throw new UnsupportedMediaTypeError("Symlinked artifacts cannot be edited");
    if (!info.isFile()) throw new BadRequestError(`Path is not a file: ${virtual}`);
    if (info.size > MAX_EDITABLE_ARTIFACT_BYTES) throw new PayloadTooLargeError("Artifact is too large to edit");
    return withHandle(await openBeneath(d, name), async (h) => {
      if (!(await h.stat()).isFile()) throw new BadRequestError(`Path is not a file: ${virtual}`);
      return h.readFile();
    });
  });
  if (current.includes(0)) throw new UnsupportedMediaTypeError("Binary artifacts cannot be edited");
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(current);
  } catch {
    throw new UnsupportedMediaTypeError("Only UTF-8 text artifacts can be edited");
  }
  if (sha256Hex(current) !== expectedSha256) throw new PreconditionFailedError("Artifact changed since it was opened");
  const updated = Buffer.from(content, "utf8");
  if (updated.length > MAX_EDITABLE_ARTIFACT_BYTES) throw new PayloadTooLargeError("Artifact is too large to edit");
  if (updated.includes(0)) throw new UnsupportedMediaTypeError("Binary content cannot be saved as an artifact");
  await sandbox.writeFile(virtual, content);
  return { path: virtual, sha256: sha256Hex(updated), size: updated.length };
}

/**
 * The ETag of a file: strong `"<sha256 hex>"` (what the app's editor takes as the file's hash) up to
 * {@link STRONG_ETAG_MAX_BYTES}, else weak `W/"<size>-<mtime ms>"`.
 */
export async function artifactEtag(realPath: string, size: number, mtimeMs: number): Promise<string> {
  if (size > STRONG_ETAG_MAX_BYTES) return `W/"${size}-${Math.floor(mtimeMs)}"`;
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(realPath)) hash.update(chunk as Buffer);
  return `"${hash.digest("hex")}"`;
}

/** Whether an `If-None-Match` header matches `etag` (weak comparison, `*` matches anything). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((t) => t.trim() === "*" || bare(t) === bare(etag));
}

/** A parsed single byte range: inclusive `start`..`end`, or unsatisfiable. */
export type ByteRange = { start: number; end: number } | "unsatisfiable" | null;

/**
 * Parses a `Range` header against a file of `size` bytes (RFC 9110 14.1.2): one `bytes=a-b`, `bytes=a-` or
 * `bytes=-n` range. Null (serve the whole file) for a missing header, another unit, several ranges or syntax this
 * does not read; `unsatisfiable` when the range lies outside the file (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}
