// A fake DingTalk: the OpenAPI at `<url>/v1.0/...` (gateway/connections/open -> endpoint + one-time ticket,
// oauth2/accessToken, robot/oToMessages/batchSend and robot/groupMessages/send with `x-acs-dingtalk-access-token`;
// card/instances/createAndDeliver and PUT card/streaming for AI Cards; robot/messageFiles/download (a hosted file's
// downloadCode -> a downloadUrl served by the fake) and the oapi `media/upload?access_token=` (multipart media + type,
// DingTalk's image formats and document types) for files; 401 InvalidAuthentication for refused
// credentials or tokens; 429 Throttling / 500 on demand) and the Stream
// endpoint on a `ws` server (a connection needs an issued ticket; CALLBACK frames pushed to it, their ACKs recorded;
// SYSTEM ping / disconnect).
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { WebSocketServer, type WebSocket } from "ws";
import { json, startPlatformFake, type PlatformFake } from "./im-platform.js";

/** A robot message the app sent: to a user (1:1) or a group. */
export interface DingTalkSent {
  to: "user" | "group";
  /** The staff id (1:1) or the openConversationId (group). */
  chat: string;
  msgKey: string;
  title: string;
  text: string;
  /** The whole parsed msgParam (a file message's `mediaId` / `photoURL`, ...). */
  param: Record<string, any>;
  at: number;
}

/** A file uploaded through `media/upload`. */
export interface DingTalkMedia {
  mediaId: string;
  type: string;
  filename: string;
  data: Buffer;
}

/** An AI Card the app created, and every full content it streamed into it. */
export interface DingTalkCard {
  outTrackId: string;
  templateId: string;
  openSpaceId: string;
  /** The created content, then each streamed one. */
  contents: string[];
  /** Times of the streaming updates (ms since epoch). */
  updates: number[];
  finalized: boolean;
}

/** The fake plus its app credentials and stream state. */
export interface DingTalkFake extends PlatformFake {
  clientId: string;
  clientSecret: string;
  sent: DingTalkSent[];
  cards: DingTalkCard[];
  /** The Stream subscriptions asked for in each open-connection call. */
  opens: Record<string, any>[];
  /** ACK frames received, by the pushed frame's messageId. */
  acks: Map<string, Record<string, any>>;
  /** Echoes of SYSTEM pings received. */
  pongs: Record<string, any>[];
  /** Open stream connections. */
  connections(): number;
  /** Stream connections accepted so far. */
  accepted(): number;
  /** Pushes a chatbot message as a CALLBACK frame to every open connection; resolves its frame's messageId. */
  push(message: Record<string, unknown>): string;
  ping(): void;
  /** Sends `text` as it is (hostile or malformed frames) to every open connection. */
  pushRaw(text: string): void;
  /** SYSTEM disconnect, then the server closes the connections (as DingTalk does before a restart). */
  disconnect(): void;
  /** Files uploaded through `media/upload`. */
  media: DingTalkMedia[];
  /** Hosts a file a user sent; resolves the `downloadCode` a picture / file message carries. */
  hostFile(data: Buffer): string;
  /** Downloads of hosted files served. */
  downloads(): number;
  /** Refuses the app's credentials and every issued token from now on. */
  revoke(): void;
}

/** A chatbot text message from staff `userId`: 1:1 unless `group` (an openConversationId) is given. */
export function dingtalkText(msgId: string, userId: string, content: string, options: { group?: string; atBot?: boolean } = {}): Record<string, unknown> {
  return {
    msgId, msgtype: "text", text: { content: options.group ? ` ${content}` : content }, senderStaffId: userId, senderId: `$:LWCP_v1:$${userId}`, senderNick: `user${userId}`,
    conversationType: options.group ? "2" : "1", conversationId: options.group ?? `cid-p2p-${userId}`, isInAtList: options.group ? options.atBot !== false : true,
    chatbotUserId: "$:LWCP_v1:$bot", robotCode: "ding-app", createAt: Date.now(), sessionWebhook: "http://127.0.0.1:9/never-used", sessionWebhookExpiredTime: Date.now() + 3_600_000,
  };
}

/** Starts the fake for app `clientId` / `clientSecret`. */
export async function startDingTalkFake(clientId = "ding-app", clientSecret = "ding-secret"): Promise<DingTalkFake> {
  let self!: DingTalkFake;
  let revoked = false;
  let n = 0;
  const tokens = new Set<string>();
  const tickets = new Set<string>();
  const hosted = new Map<string, Buffer>();
  let downloads = 0;
  const tokenOk = (token: unknown) => !revoked && tokens.has(String(token ?? ""));
  const refuse = (res: Parameters<typeof json>[0]) => json(res, 401, { code: "InvalidAuthentication", message: "credentials or token refused", requestid: randomUUID() });
  const rest = await startPlatformFake((call, url, res) => {
    const p = url.pathname;
    if (p === "/v1.0/gateway/connections/open") {
      if (revoked || call.body.clientId !== self.clientId || call.body.clientSecret !== self.clientSecret) return refuse(res);
      self.opens.push(call.body);
      const ticket = `ticket-${++n}`;
      tickets.add(ticket);
      return json(res, 200, { endpoint: `${wsUrl}/connect`, ticket });
    }
    if (p === "/v1.0/oauth2/accessToken") {
      if (revoked || call.body.appKey !== self.clientId || call.body.appSecret !== self.clientSecret) return json(res, 400, { code: "invalidClientIdOrSecret", message: "bad appKey or appSecret" });
      const token = `tok-${++n}`;
      tokens.add(token);
      return json(res, 200, { accessToken: token, expireIn: 7200 });
    }
    if (p === "/v1.0/robot/messageFiles/download") {
      if (!tokenOk(call.headers["x-acs-dingtalk-access-token"])) return refuse(res);
      const code = String(call.body.downloadCode ?? "");
      if (call.body.robotCode !== self.clientId || !hosted.has(code)) return json(res, 400, { code: "invalidParameter.downloadCode", message: "unknown downloadCode" });
      return json(res, 200, { downloadUrl: `${self.url}/download/${encodeURIComponent(code)}?sig=${randomUUID()}` });
    }
    if (p.startsWith("/download/") && call.verb === "GET") {
      const data = hosted.get(decodeURIComponent(p.slice("/download/".length)));
      if (!data) return json(res, 404, { code: "NotFound" });
      downloads++;
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(data.length) }).end(data);
      return;
    }
    if (p === "/media/upload") {
      if (!tokenOk(url.searchParams.get("access_token"))) return json(res, 200, { errcode: 40014, errmsg: "invalid access_token" });
      const media = call.files.media;
      const ext = (media?.filename ?? "").split(".").at(-1)?.toLowerCase() ?? "";
      const allowed = call.body.type === "image" ? ["jpg", "jpeg", "png", "gif", "bmp"] : call.body.type === "file" ? ["doc", "docx", "xls", "xlsx", "ppt", "pptx", "zip", "pdf", "rar"] : [];
      if (!media || !allowed.includes(ext) || media.data.length > 20 * 1024 * 1024) return json(res, 200, { errcode: 40004, errmsg: "invalid media type or size" });
      const mediaId = `@media-${++n}`;
      self.media.push({ mediaId, type: String(call.body.type), filename: media.filename, data: media.data });
      return json(res, 200, { errcode: 0, errmsg: "ok", type: call.body.type, media_id: mediaId, created_at: Date.now() });
    }
    const send = p === "/v1.0/robot/oToMessages/batchSend" ? "user" : p === "/v1.0/robot/groupMessages/send" ? "group" : null;
    if (send) {
      if (revoked || !tokens.has(String(call.headers["x-acs-dingtalk-access-token"] ?? ""))) return refuse(res);
      const param = JSON.parse(String(call.body.msgParam ?? "{}")) as Record<string, any>;
      const chat = send === "user" ? call.body.userIds?.[0] : call.body.openConversationId;
      if (call.body.robotCode !== self.clientId || typeof chat !== "string") return json(res, 400, { code: "invalidParameter", message: "robotCode or recipient missing" });
      const mediaRef = call.body.msgKey === "sampleFile" ? param.mediaId : call.body.msgKey === "sampleImageMsg" ? param.photoURL : undefined;
      if (mediaRef !== undefined && !self.media.some((m) => m.mediaId === mediaRef)) return json(res, 400, { code: "invalidParameter", message: "unknown media id" });
      self.sent.push({ to: send, chat, msgKey: call.body.msgKey, title: param.title ?? "", text: param.text ?? param.content ?? "", param, at: Date.now() });
      return json(res, 200, send === "user" ? { processQueryKey: `pqk-${++n}`, invalidStaffIdList: [], flowControlledStaffIdList: [] } : { processQueryKey: `pqk-${++n}` });
    }
    if (p.startsWith("/v1.0/card/") && (revoked || !tokens.has(String(call.headers["x-acs-dingtalk-access-token"] ?? "")))) return refuse(res);
    if (p === "/v1.0/card/instances/createAndDeliver" && call.verb === "POST") {
      const b = call.body;
      const space = String(b.openSpaceId ?? "");
      const deliver = space.includes("IM_GROUP.") ? b.imGroupOpenDeliverModel?.robotCode === self.clientId : b.imRobotOpenDeliverModel?.spaceType === "IM_ROBOT";
      if (!b.cardTemplateId || !b.outTrackId || !/^dtv1\.card\/\/IM_(ROBOT|GROUP)\./.test(space) || !deliver) return json(res, 400, { code: "invalidParameter", message: "card parameters" });
      self.cards.push({ outTrackId: b.outTrackId, templateId: b.cardTemplateId, openSpaceId: space, contents: [String(b.cardData?.cardParamMap?.content ?? "")], updates: [], finalized: false });
      return json(res, 200, { success: true, result: { outTrackId: b.outTrackId, deliverResults: [{ spaceType: space.includes("IM_GROUP.") ? "IM_GROUP" : "IM_ROBOT", spaceId: space.split(".").at(-1), success: true }] } });
    }
    if (p === "/v1.0/card/streaming" && call.verb === "PUT") {
      const card = self.cards.find((c) => c.outTrackId === call.body.outTrackId);
      if (!card || card.finalized || call.body.key !== "content" || !call.body.guid) return json(res, 400, { code: "invalidParameter", message: "unknown or finished card" });
      card.contents.push(String(call.body.content ?? ""));
      card.updates.push(Date.now());
      card.finalized = call.body.isFinalize === true;
      return json(res, 200, { success: true });
    }
    return json(res, 404, { code: "NotFound", message: p });
  }, (status, res) => (status === 429 ? json(res, 429, { code: "Throttling", message: "too many requests" }, { "retry-after": "1" }) : json(res, status, { code: "ServiceUnavailable", message: "try later" })));

  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const wsUrl = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const live = new Set<WebSocket>();
  let accepted = 0;
  wss.on("connection", (ws, req) => {
    const ticket = new URL(req.url ?? "/", "http://fake").searchParams.get("ticket") ?? "";
    // A ticket is good for one connection.
    if (!tickets.delete(ticket)) return ws.close(4001, "invalid ticket");
    accepted++;
    live.add(ws);
    ws.on("close", () => live.delete(ws));
    ws.on("message", (raw) => {
      const frame = JSON.parse(raw.toString()) as Record<string, any>;
      const id = String(frame.headers?.messageId ?? "");
      if (id.startsWith("ping-")) self.pongs.push(frame);
      else self.acks.set(id, frame);
    });
  });
  const frame = (type: string, topic: string, messageId: string, data: unknown) => JSON.stringify({ specVersion: "1.0", type, headers: { appId: self.clientId, connectionId: "conn", contentType: "application/json", messageId, time: String(Date.now()), topic }, data: JSON.stringify(data) });
  const closeRest = rest.close;
  self = Object.assign(rest, {
    clientId, clientSecret, sent: [] as DingTalkSent[], media: [] as DingTalkMedia[], cards: [] as DingTalkCard[], opens: [] as Record<string, any>[], acks: new Map<string, Record<string, any>>(), pongs: [] as Record<string, any>[],
    connections: () => live.size,
    accepted: () => accepted,
    push: (message: Record<string, unknown>) => {
      const id = `frame-${randomUUID()}`;
      for (const ws of live) ws.send(frame("CALLBACK", "/v1.0/im/bot/messages/get", id, message));
      return id;
    },
    pushRaw: (text: string) => {
      for (const ws of live) ws.send(text);
    },
    ping: () => {
      for (const ws of live) ws.send(frame("SYSTEM", "ping", `ping-${++n}`, { opaque: "x" }));
    },
    disconnect: () => {
      for (const ws of live) {
        ws.send(frame("SYSTEM", "disconnect", `sys-${++n}`, { reason: "restart" }));
        setTimeout(() => ws.terminate(), 50);
      }
    },
    hostFile: (data: Buffer) => {
      const code = `dc-${randomUUID()}`;
      hosted.set(code, data);
      return code;
    },
    downloads: () => downloads,
    revoke: () => { revoked = true; },
    close: async () => {
      for (const ws of live) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await closeRest();
    },
  });
  return self;
}
