// A fake Feishu / Lark Open Platform at `<url>/open-apis/...`: tenant_access_token (internal app), im/v1 messages
// (create in a chat, reply to a message, PATCH a card), errors in the documented shape (`{code, msg}`; 99991663 for
// an expired token; HTTP 429 with code 99991400 and `x-ogw-ratelimit-reset` when rate limited). `encryptedEvent`
// builds an event callback delivery as Feishu sends it with an Encrypt Key: AES-256-CBC envelope plus signature.
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { json, startPlatformFake, type PlatformCall, type PlatformFake } from "./im-platform.js";

/** A bot message and every text its card has shown (first the sent one, then each PATCH). */
export interface FeishuSent {
  message_id: string;
  /** The message it replies to (reply API), or null for a message created in a chat. */
  reply_to: string | null;
  reply_in_thread: boolean;
  chat_id: string | null;
  /** `interactive` (a card: `texts`), `image` or `file` (`key`: the uploaded image_key / file_key). */
  msg_type: string;
  key: string | null;
  texts: string[];
}

/** A file a bot uploaded (`im/v1/images` or `im/v1/files`). */
export interface FeishuUpload {
  key: string;
  kind: "image" | "file";
  file_type: string | null;
  file_name: string;
  data: Buffer;
}

/** The fake plus its tenant state. */
export interface FeishuFake extends PlatformFake {
  appId: string;
  appSecret: string;
  sent: FeishuSent[];
  /** tenant_access_tokens issued, in order. */
  tokens: string[];
  /** Makes every issued token stale (the next call with one gets code 99991663). */
  expireTokens(): void;
  uploads: FeishuUpload[];
  /**
   * Adds a message resource (a file or image the user sent) served at `im/v1/messages/{messageId}/resources/{key}`.
   * `claimSize`: the Content-Length announced instead (a large file whose body never comes).
   */
  addResource(messageId: string, key: string, data: Buffer, options?: { claimSize?: number }): void;
  /** Answers `POST /callback/ws/endpoint` (the long connection's URL); set by feishu-ws.ts `attachLongConnection`. */
  wsEndpoint?: (call: PlatformCall, res: ServerResponse) => void;
}

const cardText = (content: unknown): string => {
  const card = JSON.parse(String(content)) as { elements?: { content?: string }[] };
  return String(card.elements?.[0]?.content ?? "");
};

/** Starts the fake for app `appId` / `appSecret`. */
export async function startFeishuFake(appId = "cli_test", appSecret = "secret-test"): Promise<FeishuFake> {
  let seq = 1;
  const valid = new Set<string>();
  const resources = new Map<string, { data: Buffer; type: string; claimSize?: number }>();
  let self!: FeishuFake;
  const fake = await startPlatformFake((call, url, res) => {
    if (url.pathname === "/callback/ws/endpoint") return self.wsEndpoint ? self.wsEndpoint(call, res) : json(res, 404, { code: 404, msg: "not found" });
    const path = url.pathname.replace(/^\/open-apis\//, "");
    if (path === "auth/v3/tenant_access_token/internal") {
      if (call.body.app_id !== self.appId || call.body.app_secret !== self.appSecret) return json(res, 400, { code: 10014, msg: "app secret invalid" });
      const token = `t-${seq++}`;
      valid.add(token);
      self.tokens.push(token);
      return json(res, 200, { code: 0, msg: "ok", tenant_access_token: token, expire: 7200 });
    }
    const token = String(call.headers.authorization ?? "").replace(/^Bearer /, "");
    if (!valid.has(token)) return json(res, 400, { code: 99991663, msg: "Invalid access token for authorization. Please make a request with token attached." });
    const resource = /^im\/v1\/messages\/([^/]+)\/resources\/([^/?]+)$/.exec(path);
    if (call.verb === "GET" && resource) {
      const r = resources.get(`${decodeURIComponent(resource[1])}/${decodeURIComponent(resource[2])}`);
      if (!r || url.searchParams.get("type") !== r.type) return json(res, 400, { code: 234003, msg: "File not in msg." });
      if (r.claimSize !== undefined) return void res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(r.claimSize) }).write(r.data.subarray(0, 1024));
      return void res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(r.data.length) }).end(r.data);
    }
    if (call.verb === "POST" && (path === "im/v1/images" || path === "im/v1/files")) {
      const image = path === "im/v1/images";
      const part = call.files[image ? "image" : "file"];
      if (!part || (image && call.body.image_type !== "message")) return json(res, 400, { code: 234001, msg: "Invalid request param." });
      const key = `${image ? "img" : "file"}_v3_${seq++}`;
      self.uploads.push({ key, kind: image ? "image" : "file", file_type: image ? null : String(call.body.file_type), file_name: image ? part.filename : String(call.body.file_name), data: part.data });
      return json(res, 200, { code: 0, msg: "success", data: image ? { image_key: key } : { file_key: key } });
    }
    const reply = /^im\/v1\/messages\/([^/]+)\/reply$/.exec(path);
    const one = /^im\/v1\/messages\/([^/]+)$/.exec(path);
    if (call.verb === "POST" && (reply || path === "im/v1/messages")) {
      const type = String(call.body.msg_type);
      if (!["interactive", "image", "file"].includes(type)) return json(res, 400, { code: 230001, msg: "unexpected msg_type" });
      const content = JSON.parse(String(call.body.content)) as { image_key?: string; file_key?: string };
      const key = type === "image" ? content.image_key : type === "file" ? content.file_key : undefined;
      if (key !== undefined && !self.uploads.some((u) => u.key === key)) return json(res, 400, { code: 230001, msg: "invalid key" });
      const message_id = `om_${seq++}`;
      self.sent.push({ message_id, reply_to: reply ? decodeURIComponent(reply[1]) : null, reply_in_thread: call.body.reply_in_thread === true, chat_id: reply ? null : call.body.receive_id, msg_type: type, key: key ?? null, texts: type === "interactive" ? [cardText(call.body.content)] : [] });
      return json(res, 200, { code: 0, msg: "success", data: { message_id } });
    }
    if (call.verb === "PATCH" && one) {
      const m = self.sent.find((s) => s.message_id === decodeURIComponent(one[1]));
      if (!m) return json(res, 400, { code: 230011, msg: "message not found" });
      m.texts.push(cardText(call.body.content));
      return json(res, 200, { code: 0, msg: "success", data: {} });
    }
    return json(res, 404, { code: 404, msg: "not found" });
  }, (status, res) => (status === 429 ? json(res, 429, { code: 99991400, msg: "request trigger frequency limit" }, { "x-ogw-ratelimit-reset": "1" }) : json(res, status, { code: 1, msg: "internal error" })));
  self = Object.assign(fake, {
    appId, appSecret, sent: [] as FeishuSent[], tokens: [] as string[],
    expireTokens: () => valid.clear(), uploads: [] as FeishuUpload[],
    addResource: (messageId: string, key: string, data: Buffer, options: { claimSize?: number } = {}) => void resources.set(`${messageId}/${key}`, { data, type: key.startsWith("img_") ? "image" : "file", claimSize: options.claimSize }),
  });
  return self;
}

/** An `im.message.receive_v1` event (schema 2.0) with a text message from `openId`. */
export function feishuText(eventId: string, openId: string, text: string, options: FeishuMessageOptions = {}): Record<string, unknown> {
  return feishuMessage(eventId, openId, "text", { text }, options);
}

/** Where a message was sent and how it looks (a DM from the user unless said otherwise). */
export interface FeishuMessageOptions {
  chatType?: "p2p" | "group";
  chatId?: string;
  messageId?: string;
  token?: string;
  mentions?: { key: string; name: string }[];
}

/** An `im.message.receive_v1` event of any message type: `content` is the message's content object (`{file_key, file_name}`, `{image_key}`, a post). */
export function feishuMessage(eventId: string, openId: string, messageType: string, content: Record<string, unknown>, options: FeishuMessageOptions = {}): Record<string, unknown> {
  return {
    schema: "2.0",
    header: { event_id: eventId, event_type: "im.message.receive_v1", token: options.token ?? "vtoken", app_id: "cli_test", tenant_key: "tenant-1", create_time: String(Date.now()) },
    event: {
      sender: { sender_id: { open_id: openId, user_id: `u-${openId}` }, sender_type: "user", tenant_key: "tenant-1" },
      message: {
        message_id: options.messageId ?? `om_in_${eventId}`, chat_id: options.chatId ?? `oc_p2p_${openId}`, chat_type: options.chatType ?? "p2p", message_type: messageType,
        content: JSON.stringify(content), mentions: (options.mentions ?? []).map((m) => ({ key: m.key, name: m.name, id: { open_id: `ou_${m.name}` } })),
      },
    },
  };
}

/** A delivery as Feishu sends it with an Encrypt Key: `{encrypt}` body and the X-Lark-* signature headers. */
export function encryptedEvent(encryptKey: string, payload: Record<string, unknown>, options: { signWith?: string } = {}): { body: string; headers: Record<string, string> } {
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", createHash("sha256").update(encryptKey).digest(), iv);
  const encrypted = Buffer.concat([iv, cipher.update(JSON.stringify(payload), "utf8"), cipher.final()]).toString("base64");
  const body = JSON.stringify({ encrypt: encrypted });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = randomBytes(8).toString("hex");
  const signature = createHash("sha256").update(timestamp + nonce + (options.signWith ?? encryptKey) + body).digest("hex");
  return { body, headers: { "content-type": "application/json", "x-lark-request-timestamp": timestamp, "x-lark-request-nonce": nonce, "x-lark-signature": signature } };
}
