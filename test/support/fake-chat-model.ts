// The one fake chat model of the test suite: answers from a queue of replies (then a fallback), records every call.
// Tests that go through HTTP use the fake OpenAI server (fake-openai.ts) or the shipped ScriptedChatModel instead.
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";

/** One scripted reply: text, a message description, an Error to throw, or a function of the request. */
export type Reply =
  | string
  | Error
  | { content?: string; tool_calls?: { name: string; args?: Record<string, unknown>; id?: string }[]; usage?: { input_tokens: number; output_tokens: number }; finish_reason?: string }
  | ((messages: BaseMessage[]) => Reply);

let callSeq = 0;

/** Answers with `replies` in order (then `fallback`), records the messages of every call. */
export class FakeChatModel extends BaseChatModel {
  calls: BaseMessage[][] = [];
  callOptions: Record<string, unknown>[] = [];
  private readonly replies: Reply[];
  constructor(replies: Reply[] = [], private readonly fallback: Reply = "done") {
    super({});
    this.replies = [...replies];
  }
  _llmType() {
    return "fake";
  }
  override bindTools(): this {
    return this;
  }
  private toMessage(reply: Reply, messages: BaseMessage[]): AIMessage {
    if (typeof reply === "function") return this.toMessage(reply(messages), messages);
    if (reply instanceof Error) throw reply;
    if (typeof reply === "string") return new AIMessage({ content: reply, response_metadata: { finish_reason: "stop" } });
    const calls = (reply.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args ?? {}, id: c.id ?? `tc-${++callSeq}`, type: "tool_call" as const }));
    return new AIMessage({
      content: reply.content ?? "",
      tool_calls: calls,
      response_metadata: { finish_reason: reply.finish_reason ?? (calls.length ? "tool_calls" : "stop") },
      ...(reply.usage ? { usage_metadata: { ...reply.usage, total_tokens: reply.usage.input_tokens + reply.usage.output_tokens } } : {}),
    });
  }
  async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"]): Promise<ChatResult> {
    this.calls.push(messages);
    this.callOptions.push(options as Record<string, unknown>);
    const reply = this.replies.length ? this.replies.shift()! : this.fallback;
    const message = this.toMessage(reply, messages);
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}
