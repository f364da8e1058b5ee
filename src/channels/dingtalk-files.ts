// Files both ways on DingTalk (upstream dingtalk.py `_extract_files`, `_download_by_code`, `send_file`). Inbound: a
// `picture` message, the inline pictures of a `richText` message and a `file` message carry a `downloadCode`; the
// robot API's `messageFiles/download` exchanges it for a short-lived `downloadUrl`, which is fetched (that URL only).
// Outbound: a presented output is uploaded with the documented media API (`POST <oapi_base>/media/upload`, multipart
// `media` + `type`, the app access token as `access_token`), then sent as a `sampleImageMsg` / `sampleFile` robot
// message with the `media_id` it gave.
import path from "node:path";
import type { PlatformAnswer, Verdict } from "./platform-http.js";
import { retryAfterHeaderMs } from "./platform-http.js";
import { PlatformError, type InboundFile, type OutboundFile } from "./types.js";

/** The largest file the media upload takes (DingTalk: 20 MB for images and files; upstream's `_MAX_UPLOAD_SIZE_BYTES`). */
export const DINGTALK_MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
/** The image formats `media/upload` takes as `type=image` (others go up as files). */
const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/bmp"]);
/** The document extensions `media/upload` takes as `type=file` (DingTalk's documented list). */
export const DINGTALK_FILE_EXTENSIONS = ["doc", "docx", "xls", "xlsx", "ppt", "pptx", "zip", "pdf", "rar"];
/** oapi `errcode`s that mean the token or the app credentials are refused. */
const AUTH_CODES = new Set([40001, 40014, 40089, 42001]);
/** oapi `errcode`s that mean "busy" or a flow-control limit: wait and try again. */
const BUSY_CODES = new Set([-1, 90002, 90005, 90006, 90018]);

/**
 * The files a chatbot message carries, not yet downloaded (`ref` is the `downloadCode`; DingTalk declares no size).
 * `picture`: one image; `richText`: each item with a `downloadCode` (its pictures); `file`: one file named `fileName`.
 */
export function dingtalkFiles(m: Record<string, any>): InboundFile[] {
  const id = String(m.msgId ?? "msg").replace(/[^A-Za-z0-9_-]/g, "").slice(-24) || "msg";
  const code = (v: unknown) => (typeof v === "string" && v ? v : null);
  if (m.msgtype === "picture") {
    const ref = code(m.content?.downloadCode);
    return ref ? [{ ref, filename: `dingtalk-image-${id}.png`, size: null, kind: "image" }] : [];
  }
  if (m.msgtype === "richText") {
    const items: unknown[] = Array.isArray(m.content?.richText) ? m.content.richText : [];
    const refs = items.map((i) => code((i as { downloadCode?: unknown } | null)?.downloadCode)).filter((r): r is string => r !== null);
    return refs.map((ref, n) => ({ ref, filename: `dingtalk-image-${id}-${n + 1}.png`, size: null, kind: "image" as const }));
  }
  if (m.msgtype === "file") {
    const ref = code(m.content?.downloadCode);
    const name = code(m.content?.fileName) ?? `dingtalk-file-${id}.bin`;
    return ref ? [{ ref, filename: name, size: null, kind: "file" }] : [];
  }
  return [];
}

/** The `downloadUrl` of a `messageFiles/download` answer, when it is an http(s) URL. @throws PlatformError otherwise. */
export function downloadUrlOf(answer: PlatformAnswer): string {
  const url = answer.body?.downloadUrl;
  if (typeof url === "string" && /^https?:\/\//i.test(url)) return url;
  throw new PlatformError("dingtalk", "other", "DingTalk gave no download URL for the file");
}

/** Reads an oapi answer (HTTP 200 with `errcode`): 0 ok; busy / flow control waits; a refused token is `auth`. */
export function judgeOapi(answer: PlatformAnswer): Verdict {
  if (answer.status === 429) return { kind: "retry", afterMs: retryAfterHeaderMs(answer.headers) ?? 1000 };
  if (answer.status >= 500) return { kind: "retry" };
  const errcode = Number(answer.body?.errcode ?? (answer.status === 200 ? 0 : NaN));
  if (answer.status === 200 && errcode === 0) return { kind: "ok" };
  if (BUSY_CODES.has(errcode)) return { kind: "retry", afterMs: 1000 };
  const auth = answer.status === 401 || AUTH_CODES.has(errcode);
  const detail = `${Number.isNaN(errcode) ? `HTTP ${answer.status}` : errcode} ${String(answer.body?.errmsg ?? "")}`.trim();
  return { kind: "fail", error: new PlatformError("dingtalk", auth ? "auth" : "other", `DingTalk refused the media upload: ${detail}`) };
}

/** How a presented file goes up: `image` (a DingTalk image format), `file` (a listed document type), else null (DingTalk refuses it). */
export function uploadKind(file: OutboundFile): "image" | "file" | null {
  if (IMAGE_TYPES.has(file.contentType.toLowerCase())) return "image";
  const ext = path.extname(file.filename).slice(1).toLowerCase();
  return DINGTALK_FILE_EXTENSIONS.includes(ext) ? "file" : null;
}

/** The multipart body of `media/upload`: `type` and the file as `media`. */
export function mediaForm(file: OutboundFile, kind: "image" | "file"): FormData {
  const form = new FormData();
  form.set("type", kind);
  form.set("media", new Blob([new Uint8Array(file.data)], { type: file.contentType }), file.filename);
  return form;
}

/** The robot message for an uploaded file: `sampleImageMsg` (`photoURL` = the media id) or `sampleFile`. */
export function fileMessage(file: OutboundFile, kind: "image" | "file", mediaId: string): { msgKey: string; msgParam: string } {
  if (kind === "image") return { msgKey: "sampleImageMsg", msgParam: JSON.stringify({ photoURL: mediaId }) };
  const fileType = path.extname(file.filename).slice(1).toLowerCase();
  return { msgKey: "sampleFile", msgParam: JSON.stringify({ mediaId, fileName: file.filename, fileType }) };
}
