// A fake Slack Web API (https://api.slack.com/methods) at `<url>/<method>`: chat.postMessage and chat.update with
// `Authorization: Bearer <bot token>`; `{ok: false, error: "invalid_auth"}` for a wrong or revoked token, HTTP 429
// with `Retry-After` when rate limited. `signedEvent` builds an Events API delivery signed as Slack signs it.
import { createHmac } from "node:crypto";
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
}

/** Starts the fake for bot token `token`. */
export async function startSlackFake(token = "xoxb-test"): Promise<SlackFake> {
  let seq = 1;
  let self!: SlackFake;
  const fake = await startPlatformFake((call, _url, res) => {
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
    return json(res, 404, { ok: false, error: "unknown_method" });
  }, (status, res) => (status === 429 ? json(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": "1" }) : json(res, status, { ok: false, error: "internal_error" })));
  self = Object.assign(fake, { token, tokenValid: true, sent: [] as SlackSent[] });
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
