// A fake WeCom intelligent-bot long connection (a `ws` server speaking the aibot frames): `aibot_subscribe` answered
// with errcode 0 for the right bot_id + secret (else 40001 "invalid credential"), `ping` acknowledged,
// `aibot_msg_callback` frames pushed to the subscribed connection, `aibot_respond_msg` stream replies recorded per
// stream id (each frame's content replaces the last; `finish` closes it; an unknown req_id answers 846605, a frame
// on a finished stream 846608) and `aibot_send_msg` recorded. Every frame is acknowledged with its req_id, or with
// the next errcode of `failNext` (45009 frequency limit, -1 busy) as WeCom answers under load. Files a user sends
// are served over HTTP, AES-256-CBC encrypted with a per-file aeskey (IV = the key's first 16 bytes, PKCS#7 to 32).
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

/** One frame the bot sent (subscribe, ping, reply, send), as received. */
export interface WecomCall {
  cmd: string;
  reqId: string;
  body: Record<string, any>;
  at: number;
}

/** A streamed reply: every content it showed, and whether it was finished. */
export interface WecomStream {
  id: string;
  reqId: string;
  texts: string[];
  finished: boolean;
}

/** The running fake. */
export interface WecomFake {
  url: string;
  botId: string;
  secret: string;
  calls: WecomCall[];
  streams: WecomStream[];
  /** `aibot_send_msg` markdown messages: chat id and content. */
  proactive: { chatid: string; content: string }[];
  /** Files posted: uploaded (init, chunks, finish), then sent as an image / file reply or message. */
  media: { reqId: string | null; chatid: string | null; type: string; filename: string; data: Buffer }[];
  /** Errcodes for the next reply frames (respond / send), one consumed per frame. */
  failNext: number[];
  /** Subscribed (authenticated) connections now open. */
  connections(): number;
  /** Pushes an `aibot_msg_callback` with `body` to the subscribed connection; resolves its req_id. */
  deliver(body: Record<string, unknown>, reqId?: string): string;
  /** Serves `data` encrypted with a new aeskey at a URL (Content-Disposition `name`); the callback's url + aeskey. */
  hostFile(data: Buffer, name: string): { url: string; aeskey: string };
  /** File downloads served. */
  downloads: number;
  /** Drops every connection (no close frame, as a network failure). */
  drop(): void;
  close(): Promise<void>;
}

/** A text message body from `userId` (a single chat unless `chatId` names a group). */
export function wecomMessage(msgid: string, userId: string, content: string, options: { chatId?: string; aibotId?: string } = {}): Record<string, unknown> {
  const body: Record<string, unknown> = { msgid, aibotid: options.aibotId ?? "bot-1", chattype: options.chatId ? "group" : "single", from: { userid: userId }, msgtype: "text", text: { content } };
  if (options.chatId) body.chatid = options.chatId;
  return body;
}

/** WeCom's file encryption: AES-256-CBC, key = base64 `aeskey`, IV = its first 16 bytes, PKCS#7 padded to 32. */
export function encryptWecomFile(data: Buffer, aeskey: string): Buffer {
  const key = Buffer.from(aeskey, "base64");
  const pad = 32 - (data.length % 32);
  const cipher = createCipheriv("aes-256-cbc", key, key.subarray(0, 16)).setAutoPadding(false);
  return Buffer.concat([cipher.update(Buffer.concat([data, Buffer.alloc(pad, pad)])), cipher.final()]);
}

/** The file server: each hosted file at `/file/<n>`. */
async function startFileServer(files: Map<string, { body: Buffer; name: string }>, served: () => void): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const file = files.get(req.url ?? "");
    if (!file) return void res.writeHead(404).end();
    served();
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.body.length), "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(file.name)}` }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Starts the fake for bot `botId` with `secret`. */
export async function startWecomFake(botId = "bot-1", secret = "wecom-secret"): Promise<WecomFake> {
  const hosted = new Map<string, { body: Buffer; name: string }>();
  const files = await startFileServer(hosted, () => self.downloads++);
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const live = new Set<WebSocket>();
  const subscribed = new Set<WebSocket>();
  const delivered = new Set<string>();
  let n = 0;
  const ack = (ws: WebSocket, reqId: string, errcode = 0, errmsg = "ok", body?: unknown) => ws.send(JSON.stringify({ headers: { req_id: reqId }, errcode, errmsg, ...(body ? { body } : {}) }));

  const reply = (ws: WebSocket, call: WecomCall): void => {
    const code = self.failNext.shift();
    if (code !== undefined) return ack(ws, call.reqId, code, code === 45009 ? "api freq out of limit" : "system busy");
    const mediaOf = (type: string) => uploads.get(String(call.body[type]?.media_id ?? ""));
    if (call.cmd === "aibot_send_msg") {
      const upload = mediaOf(String(call.body.msgtype));
      if (upload) self.media.push({ reqId: null, chatid: String(call.body.chatid), type: String(call.body.msgtype), ...upload });
      else self.proactive.push({ chatid: String(call.body.chatid), content: String(call.body.markdown?.content ?? "") });
      return ack(ws, call.reqId);
    }
    if (!delivered.has(call.reqId)) return ack(ws, call.reqId, 846605, "invalid req_id");
    const upload = mediaOf(String(call.body.msgtype));
    if (upload) {
      self.media.push({ reqId: call.reqId, chatid: null, type: String(call.body.msgtype), ...upload });
      return ack(ws, call.reqId);
    }
    const s = call.body.stream;
    if (call.body.msgtype !== "stream" || typeof s?.id !== "string" || typeof s.content !== "string") return ack(ws, call.reqId, 40058, "invalid parameter");
    if (Buffer.byteLength(s.content) > 20480) return ack(ws, call.reqId, 40058, "content exceed max length");
    let stream = self.streams.find((x) => x.id === s.id);
    if (stream?.finished) return ack(ws, call.reqId, 846608, "stream message update expired");
    if (!stream) self.streams.push((stream = { id: s.id, reqId: call.reqId, texts: [], finished: false }));
    stream.texts.push(s.content);
    stream.finished = s.finish === true;
    ack(ws, call.reqId);
  };

  // Chunked uploads: init gives an upload_id, chunks are base64 parts, finish checks the md5 and gives a media_id.
  const pending = new Map<string, { filename: string; md5: string; chunks: Buffer[] }>();
  const uploads = new Map<string, { filename: string; data: Buffer }>();
  const upload = (ws: WebSocket, call: WecomCall): void => {
    const b = call.body;
    if (call.cmd === "aibot_upload_media_init") {
      const id = `upload-${pending.size + uploads.size + 1}`;
      pending.set(id, { filename: String(b.filename), md5: String(b.md5), chunks: [] });
      return ack(ws, call.reqId, 0, "ok", { upload_id: id });
    }
    const p = pending.get(String(b.upload_id));
    if (!p) return ack(ws, call.reqId, 40058, "invalid upload_id");
    if (call.cmd === "aibot_upload_media_chunk") {
      p.chunks[Number(b.chunk_index)] = Buffer.from(String(b.base64_data), "base64");
      return ack(ws, call.reqId);
    }
    const data = Buffer.concat(p.chunks);
    if (createHash("md5").update(data).digest("hex") !== p.md5) return ack(ws, call.reqId, 40058, "md5 mismatch");
    const mediaId = `media-${uploads.size + 1}`;
    uploads.set(mediaId, { filename: p.filename, data });
    pending.delete(String(b.upload_id));
    ack(ws, call.reqId, 0, "ok", { media_id: mediaId, type: "file", created_at: "1700000000" });
  };

  wss.on("connection", (ws) => {
    live.add(ws);
    ws.on("close", () => { live.delete(ws); subscribed.delete(ws); });
    ws.on("message", (raw) => {
      const f = JSON.parse(raw.toString()) as { cmd?: string; headers?: { req_id?: string }; body?: Record<string, any> };
      const call: WecomCall = { cmd: String(f.cmd ?? ""), reqId: String(f.headers?.req_id ?? ""), body: f.body ?? {}, at: Date.now() };
      self.calls.push(call);
      if (call.cmd === "aibot_subscribe") {
        if (call.body.bot_id !== self.botId || call.body.secret !== self.secret) return ack(ws, call.reqId, 40001, "invalid credential");
        subscribed.add(ws);
        return ack(ws, call.reqId);
      }
      if (!subscribed.has(ws)) return ack(ws, call.reqId, 40001, "not subscribed");
      if (call.cmd === "ping") return ack(ws, call.reqId);
      if (call.cmd === "aibot_respond_msg" || call.cmd === "aibot_send_msg") return reply(ws, call);
      if (call.cmd.startsWith("aibot_upload_media_")) return upload(ws, call);
      ack(ws, call.reqId, 40058, "unknown cmd");
    });
  });

  const self: WecomFake = {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, botId, secret, calls: [], streams: [], proactive: [], media: [], failNext: [],
    connections: () => subscribed.size,
    deliver: (body, reqId = `req_${++n}_${Date.now()}`) => {
      delivered.add(reqId);
      for (const ws of subscribed) ws.send(JSON.stringify({ cmd: "aibot_msg_callback", headers: { req_id: reqId }, body }));
      return reqId;
    },
    hostFile: (data, name) => {
      const aeskey = randomBytes(32).toString("base64");
      const path = `/file/${hosted.size + 1}`;
      hosted.set(path, { body: encryptWecomFile(data, aeskey), name });
      return { url: `${files.url}${path}`, aeskey };
    },
    downloads: 0,
    drop: () => {
      for (const ws of live) ws.terminate();
    },
    close: async () => {
      for (const ws of live) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      files.server.closeAllConnections();
      await new Promise<void>((resolve) => files.server.close(() => resolve()));
    },
  };
  return self;
}
