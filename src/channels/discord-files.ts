// Files on Discord both ways: a message's `attachments` become InboundFiles (downloaded by the manager through
// files.ts into the thread's uploads), and a presented output is posted as a multipart create-message
// (`payload_json` + `files[0]`, https://discord.com/developers/docs/reference#uploading-files).
import { PlatformError, type InboundFile, type OutboundFile } from "./types.js";

/** Discord's default attachment limit for a bot's message (10 MiB without server boosts). */
export const DISCORD_MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
/** Where Discord serves attachments (signed CDN URLs; no token is sent to them). */
const CDN_HOSTS = new Set(["cdn.discordapp.com", "media.discordapp.net"]);

/** The parts of a MESSAGE_CREATE `attachments` entry read here. */
export interface DiscordAttachment {
  id?: string;
  filename?: string;
  size?: number;
  url?: string;
  content_type?: string;
}

/** A message's attachments as files to download (the `url`; the declared `size` is checked before). */
export function attachmentsOf(attachments: readonly DiscordAttachment[] | undefined): InboundFile[] {
  return (attachments ?? []).flatMap((a, i): InboundFile[] => {
    if (typeof a.url !== "string") return [];
    const image = a.content_type?.startsWith("image/") ?? false;
    const filename = a.filename || `discord-attachment-${a.id ?? i}${image ? ".png" : ".bin"}`;
    return [{ ref: a.url, filename, size: typeof a.size === "number" ? a.size : null, kind: image ? "image" : "file" }];
  });
}

/**
 * The attachment URL to download, when it is on Discord's CDN over HTTPS or on the configured `api_base` origin
 * (a fake in tests). @throws PlatformError (`other`) for any other URL: an event never makes the gateway fetch
 * an arbitrary host.
 */
export function attachmentUrl(ref: string, apiBase: string): string {
  let url: URL;
  try {
    url = new URL(ref);
  } catch {
    throw new PlatformError("discord", "other", "Discord attachment URL is not a URL");
  }
  const cdn = url.protocol === "https:" && CDN_HOSTS.has(url.hostname);
  if (!cdn && url.origin !== new URL(apiBase).origin) throw new PlatformError("discord", "other", "Discord attachment URL is not on Discord's CDN");
  return url.href;
}

/** The multipart body of a create-message carrying one file (mentions off; `reference` replies to a message). */
export function fileMessageForm(file: OutboundFile, reference: string | null): FormData {
  const payload: Record<string, unknown> = { attachments: [{ id: 0, filename: file.filename }], allowed_mentions: { parse: [] } };
  if (reference) payload.message_reference = { message_id: reference, fail_if_not_exists: false };
  const form = new FormData();
  form.set("payload_json", JSON.stringify(payload));
  form.set("files[0]", new Blob([new Uint8Array(file.data)], { type: file.contentType }), file.filename);
  return form;
}
