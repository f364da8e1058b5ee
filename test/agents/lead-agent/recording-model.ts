// Test doubles loaded by the lead agent through `use:` paths (absolute file paths in the test config).
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "langchain";
import { z } from "zod";

/** What every RecordingModel saw, shared through globalThis so it survives module re-evaluation. */
export interface Recording {
  /** Constructor fields of each model built, in order. */
  constructed: Record<string, unknown>[];
  /** Messages of each model call, in order. */
  calls: BaseMessage[][];
}

export function recording(): Recording {
  const g = globalThis as { __leadAgentRecording?: Recording };
  g.__leadAgentRecording ??= { constructed: [], calls: [] };
  return g.__leadAgentRecording;
}

/** A chat model that records its constructor fields and the messages it receives, and answers "ok". */
export class RecordingModel extends BaseChatModel {
  fields: Record<string, unknown>;
  constructor(fields: Record<string, unknown> = {}) {
    super({});
    this.fields = fields;
    recording().constructed.push(fields);
  }
  _llmType() {
    return "recording";
  }
  override bindTools(): this {
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    recording().calls.push(messages);
    return { generations: [{ text: "ok", message: new AIMessage("ok") }] };
  }
}

/** A configured tool (`use: <this file>:bashTool`). */
export const bashTool = tool(async ({ command }: { command: string }) => `ran ${command}`, {
  name: "bash",
  description: "run a command",
  schema: z.object({ command: z.string() }),
});

/** A configured tool in another group (`use: <this file>:webSearchTool`). */
export const webSearchTool = tool(async ({ query }: { query: string }) => `results for ${query}`, {
  name: "web_search",
  description: "search",
  schema: z.object({ query: z.string() }),
});
