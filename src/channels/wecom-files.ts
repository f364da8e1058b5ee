// Files a WeCom user sends (upstream wecom.py `_on_ws_image` / `_on_ws_file` / `_on_ws_mixed`): the callback
// carries a download URL (valid five minutes) and, on the long connection, an `aeskey` per URL; the bytes are
// AES-256-CBC encrypted (key = base64 aeskey, IV = its first 16 bytes, PKCS#7 to 32 bytes), decrypted with the
// SDK's `decryptFile`. The callback names no file: the name comes from the download's Content-Disposition.
import { decryptFile } from "@wecom/aibot-node-sdk";
import { assertPublicUrl } from "../web/ssrf-guard.js";
import { downloadPlatformFile } from "./platform-http.js";
import { FileTooLargeError, PlatformError, type InboundFile } from "./types.js";

/** What `InboundFile.ref` holds for a WeCom file: its URL and key. */
interface WecomFileRef {
  url: string;
  aeskey: string | null;
}

/** The image / file items of a callback body, as inbound files (`msgid` names them until the download does). */
export function wecomFiles(body: { msgid?: string; msgtype?: string; image?: { url?: string; aeskey?: string }; file?: { url?: string; aeskey?: string }; mixed?: { msg_item?: { msgtype?: string; image?: { url?: string; aeskey?: string } }[] } }): InboundFile[] {
  const items: { kind: "image" | "file"; url?: string; aeskey?: string }[] = [];
  if (body.msgtype === "image") items.push({ kind: "image", ...body.image });
  else if (body.msgtype === "file") items.push({ kind: "file", ...body.file });
  else if (body.msgtype === "mixed") for (const i of body.mixed?.msg_item ?? []) if (i?.msgtype === "image") items.push({ kind: "image", ...i.image });
  return items.filter((i): i is typeof i & { url: string } => typeof i.url === "string" && i.url !== "").map((i, n) => ({
    ref: JSON.stringify({ url: i.url, aeskey: i.aeskey || null } satisfies WecomFileRef),
    filename: `wecom-${i.kind}-${body.msgid ?? "msg"}-${n + 1}${i.kind === "image" ? ".jpg" : ".bin"}`,
    size: null,
    kind: i.kind,
  }));
}

/** The file name of a Content-Disposition header (`filename*=UTF-8''...` first), or null. */
function dispositionName(header: string | null): string | null {
  if (!header) return null;
  const star = /filename\*=UTF-8''([^;\s]+)/i.exec(header);
  const plain = /filename="?([^";]+)"?/i.exec(header);
  try {
    return star ? decodeURIComponent(star[1]) : plain ? decodeURIComponent(plain[1].trim()) : null;
  } catch {
    return null;
  }
}

/**
 * The file URL to download (the callback's `url`): http(s), on the host of the configured `ws_url` (the platform's
 * root; a fake in tests), or on a host whose every address is public (the SSRF guard of the research tools).
 * WeCom names no fixed file host, so the address is what is judged: a callback never makes the gateway fetch
 * loopback, private, link-local or metadata addresses.
 * @throws PlatformError (`other`) for any other URL; nothing is fetched.
 */
export async function screenWecomFileUrl(raw: string, rootUrl: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new PlatformError("wecom", "other", "WeCom file URL is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new PlatformError("wecom", "other", "WeCom file URL is not http(s)");
  if (url.hostname === new URL(rootUrl).hostname) return url.href;
  try {
    return (await assertPublicUrl(url.href)).href;
  } catch (err) {
    throw new PlatformError("wecom", "other", `WeCom file URL refused: ${(err as Error).message}`);
  }
}

/**
 * Downloads and decrypts a WeCom file, reading at most `maxBytes` of plaintext (the ciphertext may be 32 bytes
 * longer: its padding). Renames `file` after the download's Content-Disposition when it gives a name.
 * @throws FileTooLargeError; PlatformError when the URL is refused ({@link screenWecomFileUrl}), the download fails
 *   or the bytes do not decrypt with the key.
 */
export async function downloadWecomFile(file: InboundFile, maxBytes: number, rootUrl: string, counter?: { calls: number }): Promise<Buffer> {
  const ref = JSON.parse(file.ref) as WecomFileRef;
  const url = await screenWecomFileUrl(ref.url, rootUrl);
  let name: string | null = null;
  let data: Buffer;
  try {
    // No redirects: a screened URL must not hand the download on to an address that was never judged.
    data = await downloadPlatformFile("wecom", url, file.filename, maxBytes + 32, { counter, redirect: "error", onHeaders: (h) => { name = dispositionName(h.get("content-disposition")); } });
  } catch (err) {
    throw err instanceof FileTooLargeError ? new FileTooLargeError(file.filename, maxBytes) : err;
  }
  let plain = data;
  if (ref.aeskey) {
    try {
      plain = decryptFile(data, ref.aeskey);
    } catch {
      throw new PlatformError("wecom", "other", `The file ${file.filename} could not be decrypted`);
    }
  }
  if (plain.length > maxBytes) throw new FileTooLargeError(file.filename, maxBytes);
  if (name) file.filename = name;
  return plain;
}
