// Fake Anthropic Messages API (https://docs.anthropic.com/en/api/messages): POST /v1/messages with `x-api-key`,
// JSON or SSE (`message_start`, `content_block_start|delta|stop`, `message_delta`, `message_stop`), thinking,
// text and tool_use blocks.
import type { ServerResponse } from "node:http";
import { asChatFake, FAKE_USAGE, tokens, type ChatFake, type ChatFakeReply } from "./chat-reply.js";
import { sendJson, startHttpFake, type FakeRequest } from "./http-fake.js";

function lastUserText(req: FakeRequest): string {
  const user = [...(req.body?.messages ?? [])].reverse().find((m: any) => m.role === "user");
  const c = user?.content;
  return typeof c === "string" ? c : Array.isArray(c) ? c.map((b: any) => b.text ?? "").join("") : "";
}

let counter = 0;

function stream(res: ServerResponse, body: any, reply: ChatFakeReply): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("message_start", { message: { id: `msg_${++counter}`, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: FAKE_USAGE.input, output_tokens: 1 } } });
  let index = 0;
  if (reply.thinking) {
    send("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } });
    for (const t of tokens(reply.thinking)) send("content_block_delta", { index, delta: { type: "thinking_delta", thinking: t } });
    send("content_block_delta", { index, delta: { type: "signature_delta", signature: "sig-fake" } });
    send("content_block_stop", { index: index++ });
  }
  if (reply.text) {
    send("content_block_start", { index, content_block: { type: "text", text: "" } });
    for (const t of tokens(reply.text)) send("content_block_delta", { index, delta: { type: "text_delta", text: t } });
    send("content_block_stop", { index: index++ });
  }
  for (const call of reply.toolCalls ?? []) {
    send("content_block_start", { index, content_block: { type: "tool_use", id: `toolu_${counter}_${index}`, name: call.name, input: {} } });
    send("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(call.args) } });
    send("content_block_stop", { index: index++ });
  }
  send("message_delta", { delta: { stop_reason: reply.toolCalls?.length ? "tool_use" : "end_turn", stop_sequence: null }, usage: { output_tokens: FAKE_USAGE.output } });
  send("message_stop", {});
  res.end();
}

/** Starts a fake Anthropic API accepting `apiKey`; `url` is the base URL (the SDK appends `/v1/messages`). */
export async function startAnthropicFake(apiKey: string): Promise<ChatFake> {
  let chat: ChatFake | undefined;
  const fake = await startHttpFake({
    authorized: (req) => req.headers["x-api-key"] === apiKey,
    errorBody: (status) => ({ type: "error", error: { type: status === 401 ? "authentication_error" : status === 429 ? "rate_limit_error" : "api_error", message: `fake ${status}` } }),
    handle(req, res) {
      if (req.method !== "POST" || req.path !== "/v1/messages") return sendJson(res, 404, { type: "error", error: { type: "not_found_error", message: "Not found" } });
      const reply = chat!.respond(req);
      if (req.body.stream) return stream(res, req.body, reply);
      const content = [
        ...(reply.thinking ? [{ type: "thinking", thinking: reply.thinking, signature: "sig-fake" }] : []),
        ...(reply.text ? [{ type: "text", text: reply.text }] : []),
        ...(reply.toolCalls ?? []).map((c, i) => ({ type: "tool_use", id: `toolu_${++counter}_${i}`, name: c.name, input: c.args })),
      ];
      sendJson(res, 200, { id: `msg_${++counter}`, type: "message", role: "assistant", model: req.body.model, content, stop_reason: reply.toolCalls?.length ? "tool_use" : "end_turn", stop_sequence: null, usage: { input_tokens: FAKE_USAGE.input, output_tokens: FAKE_USAGE.output } });
    },
  });
  chat = asChatFake(fake, lastUserText);
  return chat;
}
