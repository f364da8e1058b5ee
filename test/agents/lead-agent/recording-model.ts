// Test doubles loaded by the lead agent through `use:` paths (absolute file paths in the test config).
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "langchain";
import { z } from "zod";
import { FakeChatModel } from "../../support/fake-chat-model.js";

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

/**
 * The shared fake model as the lead agent builds it from `use:` (constructor fields from config.yaml): records
 * its fields and every call in the shared {@link recording}, and answers "ok".
 */
export class RecordingModel extends FakeChatModel {
  fields: Record<string, unknown>;
  constructor(fields: Record<string, unknown> = {}) {
    super([], "ok");
    this.fields = fields;
    recording().constructed.push(fields);
  }
  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"]): Promise<ChatResult> {
    recording().calls.push(messages);
    return super._generate(messages, options);
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
