// Fake Gemini API (https://ai.google.dev/api/generate-content): POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse with `x-goog-api-key`; text, thought and functionCall parts, usageMetadata.
import { asChatFake, FAKE_USAGE, tokens, type ChatFake, type ChatFakeReply } from "./chat-reply.js";
import { sendJson, startHttpFake, type FakeRequest } from "./http-fake.js";

function lastUserText(req: FakeRequest): string {
  const user = [...(req.body?.contents ?? [])].reverse().find((c: any) => c.role === "user" && c.parts?.some((p: any) => typeof p.text === "string"));
  return (user?.parts ?? []).map((p: any) => p.text ?? "").join("");
}

const usageMetadata = { promptTokenCount: FAKE_USAGE.input, candidatesTokenCount: FAKE_USAGE.output, totalTokenCount: FAKE_USAGE.input + FAKE_USAGE.output };
const candidate = (parts: unknown[], finishReason?: string) => ({ candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) }] });

/** The parts of a reply, one per streamed piece: thoughts, text tokens, then function calls. */
function pieces(reply: ChatFakeReply): unknown[] {
  return [
    ...(reply.thinking ? [{ text: reply.thinking, thought: true }] : []),
    ...tokens(reply.text ?? "").map((text) => ({ text })),
    ...(reply.toolCalls ?? []).map((c) => ({ functionCall: { name: c.name, args: c.args } })),
  ];
}

/** Starts a fake Gemini API accepting `apiKey`; `url` is the base URL (the client appends `/v1beta/models/...`). */
export async function startGeminiFake(apiKey: string): Promise<ChatFake> {
  let chat: ChatFake | undefined;
  const fake = await startHttpFake({
    authorized: (req) => req.headers["x-goog-api-key"] === apiKey,
    errorBody: (status) => ({ error: { code: status, message: `fake ${status}`, status: status === 401 ? "UNAUTHENTICATED" : status === 429 ? "RESOURCE_EXHAUSTED" : "INTERNAL" } }),
    handle(req, res) {
      const m = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent)$/.exec(req.path);
      if (req.method !== "POST" || !m) return sendJson(res, 404, { error: { code: 404, message: "Not found", status: "NOT_FOUND" } });
      const parts = pieces(chat!.respond(req));
      if (m[2] === "generateContent") return sendJson(res, 200, { ...candidate(parts, "STOP"), usageMetadata, modelVersion: m[1] });
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const part of parts) res.write(`data: ${JSON.stringify({ ...candidate([part]), modelVersion: m[1] })}\r\n\r\n`);
      res.end(`data: ${JSON.stringify({ ...candidate([{ text: "" }], "STOP"), usageMetadata, modelVersion: m[1] })}\r\n\r\n`);
    },
  });
  chat = asChatFake(fake, lastUserText);
  return chat;
}
