// What the chat-model fakes (anthropic.ts, gemini.ts, ollama.ts) answer: a scripted reply per request, streamed
// token by token in each provider's own wire format, with fixed token usage (11 in, 7 out).
import type { FakeRequest, HttpFake } from "./http-fake.js";

/** One scripted model reply. */
export interface ChatFakeReply {
  /** The answer text, streamed one word at a time. */
  text?: string;
  /** Reasoning sent before the text (a thinking block / thought part / `thinking` field). */
  thinking?: string;
  /** Tool calls sent after the text. */
  toolCalls?: { name: string; args: Record<string, unknown> }[];
}

/** A chat fake: the HTTP fake plus the reply function (change it per test; `reset()` restores the echo). */
export interface ChatFake extends HttpFake {
  respond: (req: FakeRequest) => ChatFakeReply;
  reset(): void;
}

/** Token usage every fake reports. */
export const FAKE_USAGE = { input: 11, output: 7 };

/** Splits text into the tokens the fakes stream (words with their trailing space). */
export const tokens = (text: string): string[] => text.match(/\S+\s*|\s+/g) ?? [];

/** Makes `fake` a ChatFake answering `Echo: <lastText(req)>` until told otherwise. */
export function asChatFake(fake: HttpFake, lastText: (req: FakeRequest) => string): ChatFake {
  const echo = (req: FakeRequest): ChatFakeReply => ({ text: `Echo: ${lastText(req)}` });
  const chat = fake as ChatFake;
  chat.respond = echo;
  chat.reset = () => {
    chat.requests.length = 0;
    chat.mode = "ok";
    chat.respond = echo;
  };
  return chat;
}
