// Feishu / Lark event callbacks (https://open.feishu.cn/document/server-docs/event-subscription-guide/event-subscription-configure-/request-url-configuration-case):
// opening a delivery (the `encrypt` envelope: AES-256-CBC, key = SHA-256 of the app's Encrypt Key, IV = the first
// 16 bytes), checking it (`X-Lark-Signature` = hex SHA-256 of timestamp + nonce + Encrypt Key + raw body; the
// Verification Token in the body), and reading an `im.message.receive_v1` event into an InboundMessage.
import { createDecipheriv, createHash } from "node:crypto";
import { safeEqual } from "./telegram.js";
import type { InboundFile, InboundMessage } from "./types.js";

/** What a delivery turned out to be: a challenge to echo, an event to read, or a refusal (status + detail). */
export type OpenedDelivery =
  | { kind: "challenge"; challenge: string }
  | { kind: "event"; payload: FeishuEnvelope }
  | { kind: "refused"; status: number; detail: string };

/** The schema 2.0 envelope of an event (`header` + `event`); schema 1.0 carries `token` / `uuid` at the top. */
export interface FeishuEnvelope {
  schema?: string;
  type?: string;
  token?: string;
  challenge?: string;
  header?: { event_id?: string; event_type?: string; token?: string; tenant_key?: string };
  event?: {
    sender?: { sender_id?: { open_id?: string; user_id?: string }; sender_type?: string; tenant_key?: string };
    message?: {
      message_id?: string;
      root_id?: string;
      thread_id?: string;
      chat_id?: string;
      chat_type?: string;
      message_type?: string;
      content?: string;
      mentions?: { key?: string; name?: string }[];
    };
  };
}

/** The keys a delivery is checked with (either or both may be set; an empty one is not checked). */
export interface FeishuSecrets {
  verificationToken: string;
  encryptKey: string;
}

/**
 * Decrypts an `encrypt` field with the app's Encrypt Key (Feishu's documented scheme: base64 of IV + ciphertext,
 * AES-256-CBC, PKCS#7 padding). @throws Error when the key is wrong or the data is not a ciphertext.
 */
export function decryptFeishu(encrypted: string, encryptKey: string): string {
  const key = createHash("sha256").update(encryptKey).digest();
  const data = Buffer.from(encrypted, "base64");
  if (data.length < 32) throw new Error("ciphertext too short");
  const decipher = createDecipheriv("aes-256-cbc", key, data.subarray(0, 16));
  return Buffer.concat([decipher.update(data.subarray(16)), decipher.final()]).toString("utf8");
}

/** The expected `X-Lark-Signature` of a delivery: hex SHA-256 of timestamp + nonce + Encrypt Key + raw body. */
export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, rawBody: string): string {
  return createHash("sha256").update(timestamp + nonce + encryptKey + rawBody).digest("hex");
}

const header = (headers: Record<string, string | string[] | undefined>, name: string): string => {
  const v = headers[name];
  return typeof v === "string" ? v : "";
};

/**
 * Opens and checks one delivery. With an Encrypt Key the body must be an `encrypt` envelope; events must carry a
 * valid `X-Lark-Signature` (a URL-verification challenge is answered once it decrypts and its token matches, as the
 * platform sends it before the signature is configured). With a Verification Token every body's token must match.
 */
export function openDelivery(headers: Record<string, string | string[] | undefined>, rawBody: string, secrets: FeishuSecrets): OpenedDelivery {
  let outer: Record<string, unknown>;
  try {
    outer = JSON.parse(rawBody) as Record<string, unknown>;
  } catch {
    return { kind: "refused", status: 400, detail: "Body is not a Feishu event (JSON)" };
  }
  let payload = outer as FeishuEnvelope;
  if (secrets.encryptKey) {
    if (typeof outer.encrypt !== "string") return { kind: "refused", status: 401, detail: "Expected an encrypted Feishu event (encrypt_key is set)" };
    try {
      payload = JSON.parse(decryptFeishu(outer.encrypt, secrets.encryptKey)) as FeishuEnvelope;
    } catch {
      return { kind: "refused", status: 401, detail: "The Feishu event does not decrypt with the configured encrypt_key" };
    }
  }
  const token = payload.header?.token ?? payload.token ?? "";
  if (secrets.verificationToken && !safeEqual(token, secrets.verificationToken)) return { kind: "refused", status: 401, detail: "Invalid or missing Feishu verification token" };
  if (payload.type === "url_verification") return { kind: "challenge", challenge: String(payload.challenge ?? "") };
  if (secrets.encryptKey) {
    const expected = feishuSignature(header(headers, "x-lark-request-timestamp"), header(headers, "x-lark-request-nonce"), secrets.encryptKey, rawBody);
    if (!safeEqual(header(headers, "x-lark-signature"), expected)) return { kind: "refused", status: 401, detail: "Invalid or missing X-Lark-Signature" };
  }
  return { kind: "event", payload };
}

/** A message's `content` (a JSON string) as an object; null when it is not a string of a JSON object. */
function contentObject(content: unknown): Record<string, any> | null {
  if (typeof content !== "string") return content === undefined ? {} : null;
  try {
    const parsed: unknown = JSON.parse(content);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, any>) : null;
  } catch {
    return null;
  }
}

/** The text of a `text` or `post` (rich text) message; other kinds (files, images, stickers) read as empty (files: {@link messageFiles}). */
function messageText(messageType: string | undefined, content: string | undefined): string {
  const parsed = contentObject(content);
  if (!parsed) return "";
  if (messageType === "text" && typeof parsed.text === "string") return parsed.text;
  // A post is `{title, content: [[{tag, text}, ...], ...]}`: text and @ elements, a paragraph per line (upstream).
  const paragraphs = Array.isArray(parsed.content) ? (parsed.content as unknown[]) : [];
  return paragraphs
    .map((p) => (Array.isArray(p) ? p.filter((e) => e && (e.tag === "text" || e.tag === "at") && typeof e.text === "string").map((e) => e.text as string).join(" ") : ""))
    .filter(Boolean)
    .join("\n\n");
}

/**
 * The files a message carries, to fetch with `GET im/v1/messages/{message_id}/resources/{key}?type=<kind>`: a
 * `file` (or `media`) message's `file_key`, an `image` message's `image_key`, the `img` elements of a `post`. `ref`
 * is `<message_id>/<key>`. Feishu declares no size in the event: the download itself is capped.
 */
export function messageFiles(messageId: string, messageType: string | undefined, content: string | undefined): InboundFile[] {
  const parsed = contentObject(content);
  if (!parsed) return [];
  const image = (key: string): InboundFile => ({ ref: `${messageId}/${key}`, filename: `feishu-image-${key.slice(-12)}.png`, size: null, kind: "image" });
  if ((messageType === "file" || messageType === "media") && typeof parsed.file_key === "string") {
    return [{ ref: `${messageId}/${parsed.file_key}`, filename: typeof parsed.file_name === "string" && parsed.file_name ? parsed.file_name : `feishu-file-${parsed.file_key.slice(-12)}.bin`, size: null, kind: "file" }];
  }
  if (messageType === "image" && typeof parsed.image_key === "string") return [image(parsed.image_key)];
  if (messageType !== "post" || !Array.isArray(parsed.content)) return [];
  return (parsed.content as unknown[]).flatMap((p) => (Array.isArray(p) ? p : [])).filter((e) => e?.tag === "img" && typeof e.image_key === "string").map((e) => image(e.image_key as string));
}

/**
 * Reads an `im.message.receive_v1` event as an InboundMessage, or null for other events and for messages from
 * apps. Identity: the sender's `open_id` in its tenant. A group message is its own topic (`root_id`, else its id),
 * so the answer goes into that message's thread; a p2p chat is one conversation.
 */
export function toInbound(payload: FeishuEnvelope, receivedAt: number): InboundMessage | null {
  const m = payload.event?.message;
  const sender = payload.event?.sender;
  const eventId = payload.header?.event_id;
  if (payload.header?.event_type !== "im.message.receive_v1" || !eventId || !m?.chat_id || !m.message_id) return null;
  const userId = sender?.sender_id?.open_id;
  if (!userId || (sender?.sender_type && sender.sender_type !== "user")) return null;
  let text = messageText(m.message_type, m.content);
  // Mentions appear in the text as their keys (`@_user_1`); the bot only receives group messages that mention it.
  const mentions = Array.isArray(m.mentions) ? m.mentions : [];
  for (const mention of mentions) if (mention && typeof mention.key === "string" && mention.key) text = text.split(mention.key).join("");
  const isDirect = m.chat_type === "p2p";
  return {
    provider: "feishu", eventId, userId, userName: null, workspaceId: sender?.tenant_key ?? payload.header?.tenant_key ?? null,
    chatId: m.chat_id, topicId: isDirect ? null : (m.root_id || m.message_id), replyToId: m.message_id,
    text: text.trim(), isDirect, mentioned: isDirect || mentions.length > 0, receivedAt,
    files: messageFiles(m.message_id, m.message_type, m.content),
  };
}
