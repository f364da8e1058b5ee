// Files between a chat and a thread (DeerFlow app/channels/manager.py `_ingest_inbound_files`,
// `_extract_artifacts`, `_resolve_attachments`, ported): a file the user sends becomes an upload of the thread,
// stored through the same UploadBatch and `uploads` limits as `POST /api/threads/{id}/uploads`; the files the agent
// presents from /mnt/user-data/outputs in the turn are read back and posted into the chat.
import path from "node:path";
import { Readable } from "node:stream";
import { PayloadTooLargeError, ValidationError } from "../errors.js";
import type { z } from "zod";
import type { UploadsConfigSchema } from "../config/schema.js";
import { contentTypeFor, fetchThreadArtifact, openArtifact } from "../sandbox/artifacts.js";
import type { GatewaySandboxProvider } from "../sandbox/security.js";
import { convertUploads, placeUploadsInSandbox, sanitizeUploadFilename, UploadBatch } from "../sandbox/uploads.js";
import { FileTooLargeError, type ChannelAdapter, type InboundFile, type OutboundFile } from "./types.js";

/** The `uploads` section of config.yaml. */
export type UploadsConfig = z.infer<typeof UploadsConfigSchema>;

/** Upstream's ceiling for a file sent to the bot: 100 MB (the gateway's `uploads.max_file_size` when lower). */
export const CHANNEL_FILE_LIMIT_BYTES = 100 * 1024 * 1024;
/** Only the agent's outputs are ever posted into a chat (upstream: no uploads or workspace files leave this way). */
const OUTPUTS_PREFIX = "/mnt/user-data/outputs/";

/** The largest file a user may send, in bytes: the lower of 100 MB and the upload limit. */
export function inboundFileLimit(uploads: Pick<UploadsConfig, "max_file_size">): number {
  return Math.min(CHANNEL_FILE_LIMIT_BYTES, uploads.max_file_size);
}

/** The chat's answer to a refused file (too large, too many, ...): nothing of the message was stored or run. */
export function fileRefusal(err: FileTooLargeError | PayloadTooLargeError | ValidationError): string {
  if (err instanceof FileTooLargeError) return `The file ${err.filename} is too large (the limit is ${Math.floor(err.limit / (1024 * 1024))} MB). Nothing was processed; please send a smaller file.`;
  return `${err.message}. Nothing was processed.`;
}

/** A user's file whose size, as the platform declares it, is over `limit`; null when every one fits. */
export function declaredTooLarge(files: readonly InboundFile[], limit: number): FileTooLargeError | null {
  const file = files.find((f) => f.size !== null && f.size > limit);
  return file ? new FileTooLargeError(file.filename, limit) : null;
}

/** A `files` entry of the human message (`additional_kwargs.files`), as the web app sends it. */
export interface MessageFile {
  filename: string;
  size: number;
  path: string;
  status: "uploaded";
}

/** The name a platform file is stored under: its own when it is a valid upload name, else a generated one. */
function storedName(file: InboundFile, index: number): string {
  try {
    return sanitizeUploadFilename(file.filename);
  } catch {
    return `channel-file-${index}${file.kind === "image" ? ".png" : ".bin"}`;
  }
}

/**
 * Downloads the message's files and stores them as the thread's uploads, all or nothing: a file over
 * {@link inboundFileLimit} (while downloading), or a batch over `uploads.max_files` / `max_total_size`, stores none.
 * Converts documents when `uploads.auto_convert_documents` is on, and places them in a container sandbox.
 * @returns the message's `files` entries. @throws FileTooLargeError, PayloadTooLargeError; the adapter's
 *   PlatformError when a download fails.
 */
export async function ingestFiles(adapter: ChannelAdapter, files: readonly InboundFile[], target: { provider: GatewaySandboxProvider; threadId: string; userId: string; uploads: UploadsConfig }): Promise<MessageFile[]> {
  if (!adapter.downloadFile || files.length === 0) return [];
  const sandbox = target.provider.sandboxFor(target.threadId, target.userId);
  const limit = inboundFileLimit(target.uploads);
  const batch = new UploadBatch(sandbox, { ...target.uploads, max_file_size: limit });
  try {
    for (const [i, file] of files.entries()) {
      const data = await adapter.downloadFile(file, limit);
      await batch.add(storedName(file, i), Readable.from([data]));
    }
    const committed = await batch.commit();
    const stored = target.uploads.auto_convert_documents ? await convertUploads(sandbox, committed) : committed;
    await placeUploadsInSandbox(target.provider, target.threadId, target.userId, stored);
    return committed.map((f) => ({ filename: f.filename, size: f.size, path: f.virtual_path, status: "uploaded" as const }));
  } catch (err) {
    await batch.abort();
    throw err;
  }
}

/** The message list of a run's final values. */
function messagesOf(values: Record<string, unknown> | null): Record<string, unknown>[] {
  return Array.isArray(values?.messages) ? (values.messages as Record<string, unknown>[]) : [];
}

/**
 * The paths the agent presented (`present_files` calls) in the current turn: the AI messages after the last
 * visible human message (upstream `_extract_artifacts`), outputs only, each once.
 */
export function presentedPaths(values: Record<string, unknown> | null): string[] {
  const found: string[] = [];
  const messages = messagesOf(values);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    const type = String(m.type ?? m.role ?? "");
    if (type === "human" || type === "user") {
      if ((m.additional_kwargs as { hide_from_ui?: unknown } | undefined)?.hide_from_ui === true) continue;
      break;
    }
    if (type !== "ai" && type !== "assistant") continue;
    for (const call of Array.isArray(m.tool_calls) ? (m.tool_calls as { name?: string; args?: { filepaths?: unknown } }[]) : []) {
      if (call.name !== "present_files" || !Array.isArray(call.args?.filepaths)) continue;
      for (const p of call.args.filepaths) if (typeof p === "string" && p.startsWith(OUTPUTS_PREFIX) && !found.includes(p)) found.unshift(p);
    }
  }
  return found;
}

/** Upstream's text line naming the files a reply carries (`Created File: 📎 a.md`). */
export function createdFilesText(paths: readonly string[]): string {
  const names = paths.map((p) => path.posix.basename(p));
  return names.length === 1 ? `Created File: 📎 ${names[0]}` : `Created Files: 📎 ${names.join("、")}`;
}

/**
 * Reads a presented output file of the thread (from the host copy, or the container sandbox), at most `maxBytes`.
 * @returns the file, or null when it is missing, refused (not a regular file, a symlink) or over `maxBytes`.
 */
export async function readPresentedFile(provider: GatewaySandboxProvider, threadId: string, userId: string, virtualPath: string, maxBytes: number): Promise<OutboundFile | null> {
  try {
    const remote = await fetchThreadArtifact(provider, threadId, userId, virtualPath);
    if (remote) return remote.body.length <= maxBytes ? { filename: remote.filename, data: remote.body, contentType: remote.contentType } : null;
    const opened = await openArtifact(provider.sandboxFor(threadId, userId), virtualPath);
    try {
      if (opened.size > maxBytes) return null;
      return { filename: opened.filename, data: await opened.handle.readFile(), contentType: contentTypeFor(opened.filename) };
    } finally {
      await opened.handle.close();
    }
  } catch {
    return null;
  }
}
