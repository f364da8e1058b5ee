// A fake Discord: the REST API at `<url>/...` (GET /gateway/bot, GET /channels/{id}, POST /channels/{id}/messages
// as JSON or multipart with `payload_json` + `files[n]`, PATCH /channels/{id}/messages/{id}, POST
// /channels/{id}/messages/{id}/threads; `Authorization: Bot <token>`, 401 for a wrong one, 429 with `retry_after`),
// attachment downloads at `<url>/attachments/...` (no token, as Discord's signed CDN URLs), and the
// Gateway on a `ws` server (HELLO, IDENTIFY -> READY with a session and `resume_gateway_url`, heartbeat ACKs,
// dispatches with sequence numbers, RESUME replaying what a dropped connection missed, close 4004 on a bad token).
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { json, startPlatformFake, type PlatformFake } from "./im-platform.js";

/** A bot message and every text it has shown (first the posted one, then each edit). */
export interface DiscordSent {
  id: string;
  channel_id: string;
  reply_to: string | null;
  texts: string[];
  /** The files the message carried (multipart `files[n]`). */
  files: { filename: string; type: string; data: Buffer }[];
}

/** A channel as GET /channels/{id} answers it (type 0 text, 1 DM, 11 public thread, ...). */
export interface DiscordChannel {
  id: string;
  type: number;
  guild_id?: string;
  parent_id?: string | null;
  owner_id?: string;
  name?: string;
  /** Fake-only: the bot may not start threads here (Discord answers 403 Missing Permissions). */
  no_threads?: boolean;
}

/** The fake plus its bot and gateway state. */
export interface DiscordFake extends PlatformFake {
  token: string;
  botId: string;
  gatewayUrl: string;
  sent: DiscordSent[];
  /** IDENTIFY payloads received (intents included), RESUMEs received, heartbeats received. */
  identifies: Record<string, any>[];
  resumes: Record<string, any>[];
  heartbeats: number;
  /** Open gateway connections. */
  connections(): number;
  /** Dispatches MESSAGE_CREATE (or `event`) to the session; buffered for a RESUME when no connection is open. */
  dispatch(data: Record<string, unknown>, event?: string): void;
  /** Drops the open connections (as a network failure would: no close frame). */
  drop(): void;
  /** Sends `text` as it is (hostile or malformed frames) to every identified connection. */
  pushRaw(text: string): void;
  /** Channels by id; an id not listed reads as a text channel (`dm-*`: a DM). Threads the bot starts are added. */
  channels: Map<string, DiscordChannel>;
  /** Serves `data` at an attachment URL; returns the MESSAGE_CREATE `attachments` entry (size as given, or the real one). */
  addAttachment(filename: string, data: Buffer, options?: { size?: number; contentType?: string }): Record<string, unknown>;
  /** Attachment downloads served (GETs of `/attachments/...`). */
  downloads: number;
}

/** A MESSAGE_CREATE from `userId`: a DM unless `guildId` is given. */
export function discordMessage(id: string, userId: string, content: string, options: { guildId?: string; channelId?: string; mentions?: string[]; attachments?: Record<string, unknown>[] } = {}): Record<string, unknown> {
  const m: Record<string, unknown> = {
    id, channel_id: options.channelId ?? `dm-${userId}`, content, type: 0,
    author: { id: userId, username: `user${userId}`, global_name: null }, mentions: (options.mentions ?? []).map((u) => ({ id: u })),
  };
  if (options.guildId) m.guild_id = options.guildId;
  if (options.attachments) m.attachments = options.attachments;
  return m;
}

/** Starts the fake for bot token `token`; HELLO asks for a heartbeat every `heartbeatMs`. */
export async function startDiscordFake(token = "discord-bot-token", heartbeatMs = 200): Promise<DiscordFake> {
  let seq = 1;
  let self!: DiscordFake;
  // Start Thread from Message: the thread takes the message's id; one per message (160004), none from a thread
  // or a DM (50024), as Discord answers.
  const startThread = (channelId: string, messageId: string, body: Record<string, any>, res: import("node:http").ServerResponse) => {
    const parent = channelOf(channelId);
    if (parent.type !== 0 && parent.type !== 5) return json(res, 400, { message: "Cannot execute action on this channel type", code: 50024 });
    if (parent.no_threads) return json(res, 403, { message: "Missing Permissions", code: 50013 });
    if (self.channels.has(messageId)) return json(res, 400, { message: "A thread has already been created for this message", code: 160004 });
    if (typeof body.name !== "string" || !body.name || body.name.length > 100) return json(res, 400, { message: "Invalid Form Body", code: 50035 });
    const thread: DiscordChannel = { id: messageId, type: parent.type === 5 ? 10 : 11, guild_id: parent.guild_id, parent_id: channelId, owner_id: self.botId, name: body.name };
    self.channels.set(messageId, thread);
    emit("THREAD_CREATE", { ...thread, newly_created: true });
    return json(res, 201, thread);
  };
  const attachments = new Map<string, Buffer>();
  const channelOf = (id: string): DiscordChannel => self.channels.get(id) ?? (id.startsWith("dm-") ? { id, type: 1 } : { id, type: 0, guild_id: "g-1" });
  const rest = await startPlatformFake((call, url, res) => {
    const parts = url.pathname.split("/").filter(Boolean);
    if (call.verb === "GET" && parts[0] === "attachments") {
      const data = attachments.get(parts.slice(1).join("/"));
      self.downloads++;
      if (!data) return json(res, 404, { message: "Not Found" });
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(data.length) }).end(data);
      return;
    }
    if (call.headers.authorization !== `Bot ${self.token}`) return json(res, 401, { message: "401: Unauthorized", code: 0 });
    if (call.verb === "GET" && url.pathname === "/gateway/bot") return json(res, 200, { url: self.gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    if (call.verb === "GET" && parts[0] === "channels" && parts.length === 2) return json(res, 200, channelOf(parts[1]));
    if (parts[0] === "channels" && parts[2] === "messages" && parts[4] === "threads" && call.verb === "POST") return startThread(parts[1], parts[3], call.body, res);
    if (parts[0] === "channels" && parts[2] === "messages") {
      if (call.verb === "POST" && parts.length === 3) {
        // Multipart: the JSON payload rides in `payload_json`, the files in `files[n]` (Discord's upload form).
        const body = typeof call.body.payload_json === "string" ? JSON.parse(call.body.payload_json) : call.body;
        const files = Object.entries(call.files).filter(([k]) => /^files\[\d+\]$/.test(k)).map(([, f]) => f);
        const content = typeof body.content === "string" ? body.content : "";
        if ((!content && !files.length) || content.length > 2000) return json(res, 400, { message: "Invalid Form Body", code: 50035 });
        const id = String(900_000 + seq++);
        self.sent.push({ id, channel_id: parts[1], reply_to: body.message_reference?.message_id ?? null, texts: [content], files });
        return json(res, 200, { id, channel_id: parts[1], content, attachments: files.map((f, i) => ({ id: String(i), filename: f.filename, size: f.data.length })) });
      }
      const m = self.sent.find((s) => s.channel_id === parts[1] && s.id === parts[3]);
      if (call.verb === "PATCH" && m) {
        m.texts.push(call.body.content);
        return json(res, 200, { id: m.id, channel_id: m.channel_id, content: call.body.content });
      }
      return json(res, 404, { message: "Unknown Message", code: 10008 });
    }
    return json(res, 404, { message: "404: Not Found", code: 0 });
  }, (status, res) => (status === 429 ? json(res, 429, { message: "You are being rate limited.", retry_after: 1, global: false }, { "retry-after": "1" }) : json(res, status, { message: "Internal Server Error", code: 0 })));

  // The gateway: one session; every dispatch is kept with its sequence so a RESUME can replay the missed ones.
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const sessionId = "session-1";
  const history: { s: number; t: string; d: unknown }[] = [];
  let gatewaySeq = 0;
  const live = new Set<WebSocket>();
  const ready = new Set<WebSocket>();
  const send = (ws: WebSocket, payload: unknown) => ws.send(JSON.stringify(payload));
  const emit = (t: string, d: unknown) => {
    const frame = { op: 0, s: ++gatewaySeq, t, d };
    history.push(frame);
    for (const ws of ready) send(ws, frame);
  };
  wss.on("connection", (ws) => {
    live.add(ws);
    ws.on("close", () => { live.delete(ws); ready.delete(ws); });
    send(ws, { op: 10, d: { heartbeat_interval: heartbeatMs } });
    ws.on("message", (raw) => {
      const p = JSON.parse(raw.toString()) as { op: number; d: any };
      if (p.op === 1) {
        self.heartbeats++;
        return send(ws, { op: 11 });
      }
      if (p.op === 2) {
        self.identifies.push(p.d);
        if (p.d?.token !== self.token) return ws.close(4004, "Authentication failed.");
        ready.add(ws);
        return emit("READY", { v: 10, session_id: sessionId, resume_gateway_url: self.gatewayUrl, user: { id: self.botId, username: "deerflow", bot: true }, guilds: [] });
      }
      if (p.op === 6) {
        self.resumes.push(p.d);
        if (p.d?.session_id !== sessionId || p.d?.token !== self.token) return send(ws, { op: 9, d: false });
        for (const frame of history.filter((f) => f.s > Number(p.d.seq))) send(ws, frame);
        ready.add(ws);
        return emit("RESUMED", null);
      }
    });
  });
  const closeRest = rest.close;
  self = Object.assign(rest, {
    token, botId: "4242", gatewayUrl: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, sent: [] as DiscordSent[],
    identifies: [] as Record<string, any>[], resumes: [] as Record<string, any>[], heartbeats: 0,
    connections: () => ready.size,
    channels: new Map<string, DiscordChannel>(), downloads: 0,
    addAttachment: (filename: string, data: Buffer, options: { size?: number; contentType?: string } = {}) => {
      const id = String(700_000 + attachments.size);
      attachments.set(`${id}/${encodeURIComponent(filename)}`, data);
      return { id, filename, size: options.size ?? data.length, url: `${self.url}/attachments/${id}/${encodeURIComponent(filename)}`, proxy_url: `${self.url}/attachments/${id}/${encodeURIComponent(filename)}`, content_type: options.contentType ?? "application/octet-stream" };
    },
    dispatch: (data: Record<string, unknown>, event = "MESSAGE_CREATE") => emit(event, data),
    pushRaw: (text: string) => {
      for (const ws of ready) ws.send(text);
    },
    drop: () => {
      for (const ws of live) ws.terminate();
    },
    close: async () => {
      for (const ws of live) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await closeRest();
    },
  });
  return self;
}
