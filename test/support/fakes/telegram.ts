// A fake Telegram Bot API (https://core.telegram.org/bots/api) at `<url>/bot<token>/<method>`: getUpdates (long
// polling with `offset` and `timeout`), sendMessage, editMessageText, getFile + the file download URL
// `<url>/file/bot<token>/<file_path>`, sendDocument (multipart); errors in the documented shape
// (`{ok: false, error_code, description, parameters: {retry_after}}`). A wrong or revoked token gets 401.
import { json, startPlatformFake, type PlatformFake } from "./im-platform.js";

/** A sent bot message and the texts it has shown (first the sent one, then each edit). */
export interface TelegramSent {
  chat_id: string;
  message_id: number;
  texts: string[];
}

/** The fake plus its bot state. */
export interface TelegramFake extends PlatformFake {
  token: string;
  /** Set false to revoke the token (every call then answers 401). */
  tokenValid: boolean;
  sent: TelegramSent[];
  /** Documents the bot sent (sendDocument), with their bytes. */
  documents: { chat_id: string; filename: string; type: string; data: Buffer }[];
  /** Stores a file the user "sent"; returns its file_id (getFile and the download URL serve it). */
  addFile(data: Buffer): string;
  /** A private-chat message from `userId` carrying a document (`file_size` as declared, default the bytes' length). */
  documentDm(userId: number, document: { file_id: string; file_name: string; file_size?: number; mime_type?: string }, caption?: string): Record<string, unknown>;
  /** Queues an update for getUpdates; returns its update_id. */
  pushUpdate(message: Record<string, unknown>): number;
  /** A private-chat text message update from `userId`. */
  dm(userId: number, text: string, updateId?: number): Record<string, unknown>;
}

/** Starts the fake for bot token `token`. */
export async function startTelegramFake(token = "123:TEST"): Promise<TelegramFake> {
  const updates: Record<string, any>[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const waiters = new Set<() => void>();
  const stored = new Map<string, { path: string; data: Buffer }>();
  // The fake object itself, once built (the handler runs only after that).
  let state!: TelegramFake;
  const fake = await startPlatformFake(async (call, url, res) => {
    if (call.httpMethod === "GET" && url.pathname.startsWith(`/file/bot${state.token}/`) && state.tokenValid) {
      const file = [...stored.values()].find((f) => url.pathname === `/file/bot${state.token}/${f.path}`);
      if (!file) return json(res, 404, { ok: false, error_code: 404, description: "Not Found" });
      return void res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.data.length) }).end(file.data);
    }
    if (!url.pathname.startsWith(`/bot${state.token}/`) || !state.tokenValid) return json(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const b = call.body;
    switch (call.method) {
      case "getUpdates": {
        const offset = Number(b.offset ?? 0);
        // Updates below the offset are confirmed: Telegram forgets them.
        while (updates.length && updates[0].update_id < offset) updates.shift();
        if (!updates.length && Number(b.timeout ?? 0) > 0) {
          await new Promise<void>((resolve) => {
            const t = setTimeout(done, Number(b.timeout) * 1000);
            function done() {
              clearTimeout(t);
              waiters.delete(done);
              resolve();
            }
            waiters.add(done);
          });
        }
        return json(res, 200, { ok: true, result: updates.filter((u) => u.update_id >= offset) });
      }
      case "sendMessage": {
        if (typeof b.text !== "string" || b.text.length === 0 || b.text.length > 4096) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: message text is empty or too long" });
        const message_id = nextMessageId++;
        state.sent.push({ chat_id: String(b.chat_id), message_id, texts: [b.text] });
        return json(res, 200, { ok: true, result: { message_id, chat: { id: b.chat_id }, text: b.text } });
      }
      case "editMessageText": {
        const m = state.sent.find((s) => s.chat_id === String(b.chat_id) && s.message_id === Number(b.message_id));
        if (!m) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: message to edit not found" });
        if (m.texts.at(-1) === b.text) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: message is not modified" });
        if (typeof b.text !== "string" || b.text.length > 4096) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: MESSAGE_TOO_LONG" });
        m.texts.push(b.text);
        return json(res, 200, { ok: true, result: { message_id: m.message_id, text: b.text } });
      }
      case "getFile": {
        const file = stored.get(String(b.file_id));
        if (!file) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid file_id" });
        // The hosted Bot API serves files up to 20 MB.
        if (file.data.length > 20_000_000) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: file is too big" });
        return json(res, 200, { ok: true, result: { file_id: b.file_id, file_unique_id: `u${b.file_id}`, file_size: file.data.length, file_path: file.path } });
      }
      case "sendDocument": {
        const doc = call.files.document;
        if (!b.chat_id || !doc) return json(res, 400, { ok: false, error_code: 400, description: "Bad Request: there is no document in the request" });
        state.documents.push({ chat_id: String(b.chat_id), filename: doc.filename, type: doc.type, data: doc.data });
        return json(res, 200, { ok: true, result: { message_id: nextMessageId++, chat: { id: Number(b.chat_id) }, document: { file_name: doc.filename, file_size: doc.data.length } } });
      }
      default:
        return json(res, 404, { ok: false, error_code: 404, description: "Not Found: method not found" });
    }
  }, (status, res) => json(res, status, status === 429 ? { ok: false, error_code: 429, description: "Too Many Requests: retry after 1", parameters: { retry_after: 1 } } : { ok: false, error_code: status, description: "Internal Server Error" }));
  state = Object.assign(fake, {
    token,
    tokenValid: true,
    sent: [] as TelegramSent[],
    documents: [] as TelegramFake["documents"],
    addFile(data: Buffer) {
      const id = `file${stored.size + 1}`;
      stored.set(id, { path: `documents/${id}.bin`, data });
      return id;
    },
    documentDm(userId: number, document: { file_id: string; file_name: string; file_size?: number; mime_type?: string }, caption?: string) {
      const size = document.file_size ?? stored.get(document.file_id)?.data.length;
      return { update_id: nextUpdateId++, message: { message_id: nextMessageId++, date: Math.floor(Date.now() / 1000), chat: { id: userId, type: "private" }, from: { id: userId, is_bot: false, first_name: `user${userId}` }, document: { ...document, file_size: size }, ...(caption ? { caption } : {}) } };
    },
    pushUpdate(message: Record<string, unknown>) {
      const update_id = nextUpdateId++;
      updates.push({ update_id, message });
      for (const w of [...waiters]) w();
      return update_id;
    },
    dm(userId: number, text: string, updateId?: number) {
      return { update_id: updateId ?? nextUpdateId++, message: { message_id: nextMessageId++, date: Math.floor(Date.now() / 1000), text, chat: { id: userId, type: "private" }, from: { id: userId, is_bot: false, first_name: `user${userId}` } } };
    },
  });
  return state;
}
