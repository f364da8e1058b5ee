// A fake OpenAI-compatible chat-completions server for tests: JSON and SSE responses, tool calls, and a record
// of every request body, so tests can assert exactly what @langchain/openai sent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll } from "vitest";

/** One chat-completions request as received. */
export interface RecordedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, any>;
}

/** What the fake answers for one request. */
export interface FakeReply {
  content?: string;
  /** `rawArguments` is sent as the call's `arguments` text as is (malformed JSON), instead of `args` serialised. */
  toolCalls?: { name: string; args: Record<string, unknown>; id?: string; rawArguments?: string; extra?: Record<string, unknown> }[];
  /** Provider fields of the assistant message (`reasoning_content`, ...): sent in a delta of their own before the content. */
  fields?: Record<string, unknown>;
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** Wait this long (ms) before answering (provider timeouts). */
  delayMs?: number;
  /** Stream the first tokens of `content`, then cut the connection (a failure after the first token). */
  breakAfterTokens?: number;
  /** Extra response headers (e.g. `retry-after` with a `status`). */
  headers?: Record<string, string>;
  /** The choice's `finish_reason` (default `tool_calls` with tool calls, else `stop`), e.g. `length`. */
  finishReason?: string;
}

/** A running fake server. */
export interface FakeOpenAI {
  /** Base URL including `/v1`, for `base_url:` in a model entry. */
  url: string;
  requests: RecordedRequest[];
  /** Chat-completions requests being answered right now, and the most seen at once since the last reset. */
  inFlight: number;
  maxInFlight: number;
  /** Requests whose client hung up before the reply was sent (aborted calls). */
  abandoned: number;
  /** Decides each reply; default echoes the last user message as `Echo: <text>`. */
  respond: (body: Record<string, any>) => FakeReply;
  /** Forgets recorded requests and restores the echo reply (call between tests). */
  reset(): void;
  close(): Promise<void>;
}

/** The system prompt text of a recorded chat-completions body (string or text-block content). */
export function systemText(body: Record<string, any>): string {
  const c = body.messages[0].content;
  return typeof c === "string" ? c : c.map((b: any) => b.text).join("");
}

function lastUserText(body: Record<string, any>): string {
  const users = (body.messages ?? []).filter((m: any) => m.role === "user");
  const c = users.at(-1)?.content;
  if (typeof c === "string") return c;
  return Array.isArray(c) ? c.map((b: any) => b.text ?? "").join("") : "";
}

/** The default reply: `Echo: <last user text>`. */
export const echoReply = (body: Record<string, any>): FakeReply => ({ content: `Echo: ${lastUserText(body)}` });

let counter = 0;

/** Starts the fake on a random loopback port. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const { fake, listen } = createFakeOpenAI();
  await listen();
  return fake;
}

/**
 * The fake as a per-file fixture: registers vitest hooks that start it before the file's first test, reset it
 * (recorded requests, counters, the echo reply) after each test, and close it after the file's last. Call it at
 * the top of a test file, before the hooks that use it: `after` hooks run in reverse order, so a harness started
 * in a later `beforeAll` is closed before the fake goes away.
 * @returns The fake; its `url` is set once the first `beforeAll` ran (read it inside hooks and tests only).
 */
export function useFakeOpenAI(): FakeOpenAI {
  const { fake, listen } = createFakeOpenAI();
  beforeAll(listen);
  afterEach(() => fake.reset());
  afterAll(() => fake.close());
  return fake;
}

/** The fake's object (usable at once, `url` empty) and `listen()`, which binds it and fills in `url`. */
function createFakeOpenAI(): { fake: FakeOpenAI; listen(): Promise<void> } {
  const fake: FakeOpenAI = {
    url: "",
    requests: [],
    inFlight: 0,
    maxInFlight: 0,
    abandoned: 0,
    respond: echoReply,
    reset() {
      fake.requests.length = 0;
      fake.maxInFlight = fake.inFlight;
      fake.abandoned = 0;
      fake.respond = echoReply;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = raw ? JSON.parse(raw) : {};
      fake.requests.push({ path: req.url ?? "", headers: req.headers, body });
      if (!req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }));
        return;
      }
      const reply = fake.respond(body);
      fake.inFlight++;
      fake.maxInFlight = Math.max(fake.maxInFlight, fake.inFlight);
      let answered = false;
      res.on("close", () => {
        // A client that hangs up before the reply started (an aborted call) counts as abandoned.
        if (!answered) fake.abandoned++;
        answered = true;
        fake.inFlight--;
      });
      const go = () => {
        if (res.destroyed) return;
        answered = true;
        answer(req, res, body, { ...reply, delayMs: 0 });
      };
      if (reply.delayMs) {
        const timer = setTimeout(go, reply.delayMs);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      go();
    });
  });
  const answer = (_req: IncomingMessage, res: ServerResponse, body: Record<string, any>, reply: FakeReply) => {
    if (res.destroyed) return;
    if (reply.status) {
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers }).end(JSON.stringify({ error: { message: `fake error ${reply.status}`, type: "fake" } }));
      return;
    }
    const id = `chatcmpl-${++counter}`;
    const toolCalls = (reply.toolCalls ?? []).map((tc, i) => ({ index: i, id: tc.id ?? `call_${counter}_${i}`, type: "function", function: { name: tc.name, arguments: tc.rawArguments ?? JSON.stringify(tc.args) }, ...tc.extra }));
    const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
    const finish = reply.finishReason ?? (toolCalls.length ? "tool_calls" : "stop");
    if (!body.stream) {
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id, object: "chat.completion", created: 0, model: body.model,
          choices: [{ index: 0, finish_reason: finish, message: { role: "assistant", content: reply.content ?? null, ...reply.fields, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const send = (delta: Record<string, unknown>, finishReason: string | null = null) =>
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
    send({ role: "assistant", content: "" });
    if (reply.fields) send(reply.fields);
    const tokens = (reply.content ?? "").match(/\S+\s*|\s+/g) ?? [];
    if (reply.breakAfterTokens !== undefined) {
      for (const token of tokens.slice(0, reply.breakAfterTokens)) send({ content: token });
      setTimeout(() => res.destroy(), 20);
      return;
    }
    for (const token of tokens) send({ content: token });
    for (const tc of toolCalls) {
      const { index, id, type, function: fn, ...extra } = tc;
      send({ tool_calls: [{ index, id, type, function: { name: fn.name, arguments: "" }, ...extra }] });
      send({ tool_calls: [{ index: tc.index, function: { arguments: tc.function.arguments } }] });
    }
    send({}, finish);
    if (body.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [], usage })}\n\n`);
    res.end("data: [DONE]\n\n");
  };
  const listen = async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  };
  return { fake, listen };
}
