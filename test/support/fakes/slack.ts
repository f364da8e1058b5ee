// A fake Slack Web API (https://api.slack.com/methods) at `<url>/<method>`: chat.postMessage and chat.update with
// `Authorization: Bearer <bot token>`; private file downloads (`url_private_download`, bearer token required) and
// the external upload flow (files.getUploadURLExternal -> POST to the upload URL -> files.completeUploadExternal); `{ok: false, error: "invalid_auth"}` for a wrong or revoked token, HTTP 429
// with `Retry-After` when rate limited. `signedEvent` builds an Events API delivery signed as Slack signs it.
// Socket Mode (https://docs.slack.dev/apis/events-api/using-socket-mode): apps.connections.open with the app token
// (`xapp-...`) gives a one-use `ws://` URL to a `ws` server that says `hello`, pushes `events_api` envelopes, records
// each ack by `envelope_id`, sends `disconnect` frames on request and pings every second.
import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { json, startPlatformFake, type PlatformFake } from "./im-platform.js";

/** A posted bot message and every text it has shown. */
export interface SlackSent {
  channel: string;
  ts: string;
  thread_ts?: string;
  texts: string[];
}

/** The fake plus its workspace state. */
export interface SlackFake extends PlatformFake {
  token: string;
  tokenValid: boolean;
  sent: SlackSent[];
  /** Files shared by the bot (completed external uploads), with their bytes. */
  shared: { channel: string; thread_ts?: string; filename: string; title: string; data: Buffer }[];
  /** Stores a file a user "shared"; returns the `files` entry of its message event (with `url_private_download`). */
  addFile(name: string, data: Buffer, declaredSize?: number): Record<string, unknown>;
  /** The app-level token apps.connections.open accepts while `appTokenValid`. */
  appToken: string;
  appTokenValid: boolean;
  /** Socket Mode sessions opened so far (each with its one-use ticket). */
  socketOpens: number;
  /** Socket Mode sessions open now. */
  openSockets(): number;
  /** The next this many sessions are closed (1011) before their `hello`. */
  closeBeforeHello: number;
  /** Pongs received to the fake's pings (one ping a second per session): time passing on a live session. */
  pongs: number;
  /** Envelopes pushed and the acks received, each with the time (ms since epoch). */
  pushed: { envelope_id: string; at: number }[];
  acks: { envelope_id: string; at: number }[];
  /** Pushes an `events_api` envelope carrying `payload` to the newest open session; resolves its envelope_id. */
  pushEvent(payload: Record<string, unknown>, retryAttempt?: number): string;
  /** Sends a `disconnect` frame (`refresh_requested`, `warning`, ...) to every open session. */
  requestDisconnect(reason: string): void;
  /** Sends `text` as it is (hostile or malformed frames) on the newest session. */
  pushRaw(text: string): void;
}

/** Starts the fake for bot token `token`. */
export async function startSlackFake(token = "xoxb-test"): Promise<SlackFake> {
  let seq = 1;
  let self!: SlackFake;
  const userFiles = new Map<string, Buffer>();
  const uploads = new Map<string, { filename: string; length: number; data?: Buffer }>();
  const tickets = new Set<string>();
  const sockets = new Set<WebSocket>();
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  wss.on("connection", (ws, req) => {
    // A ticket works once (Slack's URLs are single-use): an unknown or spent one is closed at once.
    const ticket = new URL(req.url ?? "/", "ws://fake").searchParams.get("ticket") ?? "";
    if (!tickets.delete(ticket)) return void ws.close(1008, "invalid ticket");
    if (self.closeBeforeHello > 0) {
      self.closeBeforeHello--;
      return void ws.close(1011, "server error");
    }
    self.socketOpens++;
    sockets.add(ws);
    const ping = setInterval(() => ws.ping(), 1000);
    ws.on("close", () => { clearInterval(ping); sockets.delete(ws); });
    ws.on("pong", () => { self.pongs++; });
    ws.on("message", (raw) => {
      const frame = JSON.parse(raw.toString()) as { envelope_id?: string };
      if (frame.envelope_id) self.acks.push({ envelope_id: frame.envelope_id, at: Date.now() });
    });
    ws.send(JSON.stringify({ type: "hello", num_connections: sockets.size, debug_info: { host: "fake-slack", approximate_connection_time: 18060 }, connection_info: { app_id: "A1" } }));
  });
  const fake = await startPlatformFake((call, url, res) => {
    if (call.method === "apps.connections.open") {
      if (call.headers.authorization !== `Bearer ${self.appToken}` || !self.appTokenValid) return json(res, 200, { ok: false, error: "invalid_auth" });
      const ticket = `t${seq++}`;
      tickets.add(ticket);
      return json(res, 200, { ok: true, url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/link/?ticket=${ticket}&app_id=A1` });
    }
    if (url.pathname.startsWith("/upload/")) {
      // The upload URL is pre-signed: no token; the bytes come as a multipart file part (or the raw body).
      const ticket = uploads.get(url.pathname.slice("/upload/".length));
      if (!ticket) return void res.writeHead(404).end("unknown upload");
      ticket.data = call.files.file?.data ?? call.raw;
      return void res.writeHead(200, { "content-type": "text/plain" }).end(`OK - ${ticket.data.length}`);
    }
    if (call.httpMethod === "GET" && url.pathname.startsWith("/files-pri/")) {
      const data = userFiles.get(url.pathname);
      if (call.headers.authorization !== `Bearer ${self.token}` || !self.tokenValid) return void res.writeHead(403).end();
      if (!data) return void res.writeHead(404).end();
      return void res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(data.length) }).end(data);
    }
    if (call.headers.authorization !== `Bearer ${self.token}` || !self.tokenValid) return json(res, 200, { ok: false, error: "invalid_auth" });
    const b = call.body;
    if (call.method === "chat.postMessage") {
      if (!b.channel || typeof b.text !== "string") return json(res, 200, { ok: false, error: "invalid_arguments" });
      const ts = `1700000000.${String(seq++).padStart(6, "0")}`;
      self.sent.push({ channel: b.channel, ts, thread_ts: b.thread_ts, texts: [b.text] });
      return json(res, 200, { ok: true, channel: b.channel, ts, message: { text: b.text } });
    }
    if (call.method === "chat.update") {
      const m = self.sent.find((s) => s.channel === b.channel && s.ts === b.ts);
      if (!m) return json(res, 200, { ok: false, error: "message_not_found" });
      m.texts.push(b.text);
      return json(res, 200, { ok: true, channel: b.channel, ts: b.ts, text: b.text });
    }
    if (call.method === "files.getUploadURLExternal") {
      if (!b.filename || !Number(b.length)) return json(res, 200, { ok: false, error: "invalid_arguments" });
      const file_id = `F${String(seq++).padStart(8, "0")}`;
      uploads.set(file_id, { filename: String(b.filename), length: Number(b.length) });
      return json(res, 200, { ok: true, upload_url: `${self.url}/upload/${file_id}`, file_id });
    }
    if (call.method === "files.completeUploadExternal") {
      let files: { id: string; title?: string }[] = [];
      try {
        files = JSON.parse(String(b.files)) as typeof files;
      } catch {
        return json(res, 200, { ok: false, error: "invalid_arguments" });
      }
      for (const f of files) {
        const ticket = uploads.get(f.id);
        // Slack refuses to complete an upload whose bytes never arrived or differ from the announced length.
        if (!ticket?.data || ticket.data.length !== ticket.length) return json(res, 200, { ok: false, error: "file_not_found" });
        self.shared.push({ channel: String(b.channel_id), thread_ts: b.thread_ts, filename: ticket.filename, title: f.title ?? ticket.filename, data: ticket.data });
      }
      return json(res, 200, { ok: true, files: files.map((f) => ({ id: f.id, title: f.title })) });
    }
    return json(res, 404, { ok: false, error: "unknown_method" });
  }, (status, res) => (status === 429 ? json(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": "1" }) : json(res, status, { ok: false, error: "internal_error" })));
  const closeHttp = fake.close;
  fake.close = async () => {
    for (const ws of sockets) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await closeHttp();
  };
  self = Object.assign(fake, {
    token, tokenValid: true, sent: [] as SlackSent[], shared: [] as SlackFake["shared"],
    appToken: "xapp-1-A1-test", appTokenValid: true, socketOpens: 0, pongs: 0, closeBeforeHello: 0, pushed: [] as SlackFake["pushed"], acks: [] as SlackFake["acks"],
    openSockets: () => sockets.size,
    pushEvent(payload: Record<string, unknown>, retryAttempt = 0) {
      const ws = [...sockets].at(-1);
      if (!ws) throw new Error("no Socket Mode session is open");
      const envelope_id = `env-${seq++}`;
      self.pushed.push({ envelope_id, at: Date.now() });
      ws.send(JSON.stringify({ envelope_id, type: "events_api", accepts_response_payload: false, retry_attempt: retryAttempt, retry_reason: retryAttempt ? "timeout" : "", payload }));
      return envelope_id;
    },
    pushRaw(text: string) {
      [...sockets].at(-1)?.send(text);
    },
    requestDisconnect(reason: string) {
      for (const ws of sockets) ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "fake-slack" } }));
    },
    addFile(name: string, data: Buffer, declaredSize?: number) {
      const id = `F${String(seq++).padStart(8, "0")}`;
      const filePath = `/files-pri/T1-${id}/download/${name}`;
      userFiles.set(filePath, data);
      return { id, name, title: name, mimetype: "text/plain", size: declaredSize ?? data.length, url_private: `${self.url}${filePath.replace("/download", "")}`, url_private_download: `${self.url}${filePath}` };
    },
  });
  return self;
}

/** An Events API `event_callback` body and its signature headers (v0 HMAC-SHA256 over `v0:<ts>:<body>`). */
export function signedEvent(secret: string, payload: Record<string, unknown>, options: { timestamp?: number } = {}): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(payload);
  const ts = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const signature = `v0=${createHmac("sha256", secret).update(`v0:${ts}:${body}`).digest("hex")}`;
  return { body, headers: { "content-type": "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": signature } };
}

/** A DM `message` event from `user` in team `T1`, as an event_callback with `eventId`. */
export function slackDm(eventId: string, user: string, text: string, channel = `D${user}`): Record<string, unknown> {
  return { type: "event_callback", team_id: "T1", event_id: eventId, event: { type: "message", channel_type: "im", channel, user, text, ts: `${Date.now() / 1000}` } };
}

/** A Socket Mode `events_api` payload: a DM `message` from `user` in team `T1`, with the bot's authorization. */
export function socketDm(eventId: string, user: string, text: string, options: { channel?: string; channelType?: string; ts?: string } = {}): Record<string, unknown> {
  return {
    token: "verification-token", team_id: "T1", api_app_id: "A1", type: "event_callback", event_id: eventId, event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ enterprise_id: null, team_id: "T1", user_id: "UBOT", is_bot: true }],
    event: { type: "message", channel_type: options.channelType ?? "im", channel: options.channel ?? `D${user}`, user, text, ts: options.ts ?? `${Date.now() / 1000}` },
  };
}
