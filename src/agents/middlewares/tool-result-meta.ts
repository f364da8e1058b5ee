// The tool message inside a tool call's result (DeerFlow tool_result_meta.py's role): a result is a ToolMessage,
// or a Command whose update carries it (SandboxMiddleware turns the first sandbox call of a run into one).
import { ToolMessage } from "@langchain/core/messages";
import { Command, isCommand } from "@langchain/langgraph";

/** The ToolMessage of `result` (itself, or the last one in a Command's `update.messages`), or null. */
export function toolMessageOf(result: unknown): ToolMessage | null {
  if (ToolMessage.isInstance(result)) return result;
  if (!isCommand(result) || !result.update || typeof result.update !== "object" || Array.isArray(result.update)) return null;
  const messages = (result.update as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return null;
  for (let i = messages.length - 1; i >= 0; i--) if (ToolMessage.isInstance(messages[i])) return messages[i] as ToolMessage;
  return null;
}

/**
 * `result` with its ToolMessage replaced by `fn(message)` (a Command keeps everything else); `result` itself when
 * there is no ToolMessage or `fn` returned the same message.
 */
export async function mapToolMessage<R>(result: R, fn: (m: ToolMessage) => ToolMessage | Promise<ToolMessage>): Promise<R> {
  const message = toolMessageOf(result);
  if (!message) return result;
  const next = await fn(message);
  if (next === message) return result;
  if (ToolMessage.isInstance(result)) return next as R;
  const command = result as unknown as Command;
  const update = command.update as Record<string, unknown>;
  const messages = (update.messages as unknown[]).map((m) => (m === message ? next : m));
  return new Command({ graph: command.graph, goto: command.goto, resume: command.resume, update: { ...update, messages } }) as R;
}
