// Fake Ollama API (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion):
// POST /api/chat, NDJSON stream (or one JSON object with `stream: false`), `thinking`, `tool_calls`, and the
// final object's `prompt_eval_count` / `eval_count`. Ollama has no API key.
import { asChatFake, FAKE_USAGE, tokens, type ChatFake } from "./chat-reply.js";
import { sendJson, startHttpFake, type FakeRequest } from "./http-fake.js";

function lastUserText(req: FakeRequest): string {
  const user = [...(req.body?.messages ?? [])].reverse().find((m: any) => m.role === "user");
  return typeof user?.content === "string" ? user.content : "";
}

/** Starts a fake Ollama server; `url` is the base URL (no `/v1`: the native `/api/chat`). */
export async function startOllamaFake(): Promise<ChatFake> {
  let chat: ChatFake | undefined;
  const fake = await startHttpFake({
    authorized: () => true,
    errorBody: (status) => ({ error: `fake ${status}` }),
    handle(req, res) {
      if (req.method !== "POST" || req.path !== "/api/chat") return sendJson(res, 404, { error: "404 page not found" });
      const reply = chat!.respond(req);
      const base = { model: req.body.model, created_at: new Date(0).toISOString() };
      const tool_calls = (reply.toolCalls ?? []).map((c) => ({ function: { name: c.name, arguments: c.args } }));
      const final = { ...base, done: true, done_reason: "stop", total_duration: 1, prompt_eval_count: FAKE_USAGE.input, eval_count: FAKE_USAGE.output };
      if (req.body.stream === false) {
        return sendJson(res, 200, { ...final, message: { role: "assistant", content: reply.text ?? "", ...(reply.thinking ? { thinking: reply.thinking } : {}), ...(tool_calls.length ? { tool_calls } : {}) } });
      }
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      const line = (message: Record<string, unknown>) => res.write(`${JSON.stringify({ ...base, message: { role: "assistant", content: "", ...message }, done: false })}\n`);
      for (const t of tokens(reply.thinking ?? "")) line({ thinking: t });
      for (const t of tokens(reply.text ?? "")) line({ content: t });
      if (tool_calls.length) line({ tool_calls });
      res.end(`${JSON.stringify({ ...final, message: { role: "assistant", content: "" } })}\n`);
    },
  });
  chat = asChatFake(fake, lastUserText);
  return chat;
}
