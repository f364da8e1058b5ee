// Wire <-> LangChain message conversion. Incoming: the LangGraph wire shape (`{type|role, content, ...}`) to
// LangChain messages, refusing shapes that would be checkpointed and then break the thread. Outgoing: see
// serialization.ts (`serializeMessage`, `serializeValues`), re-exported here so callers have one module.
import { randomUUID } from "node:crypto";
import { coerceMessageLikeToMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { BadRequestError } from "../../errors.js";
import type { RunRequest } from "../runs/run-request.js";

export { serializeMessage, serializeValues, toWire, type WireMessage } from "./serialization.js";

/** `additional_kwargs` keys only the server may set on incoming messages. */
const SERVER_OWNED_MESSAGE_KWARGS = ["original_user_content", "dynamic_context_reminder", "view_image_marker", "run_id", "timestamp"];

/** Why `content` is not a message content (a string, or a list of strings / `{type, ...}` blocks), or null. */
function contentProblem(content: unknown): string | null {
  if (typeof content === "string") return null;
  if (content === undefined) return "content is required";
  if (!Array.isArray(content)) return `content must be a string or a list of content blocks, got ${content === null ? "null" : typeof content}`;
  const bad = content.findIndex((b) => typeof b !== "string" && !(b && typeof b === "object" && !Array.isArray(b) && typeof (b as { type?: unknown }).type === "string"));
  return bad === -1 ? null : `content[${bad}] must be a string or an object with a string "type"`;
}

/**
 * Converts wire messages (`{type|role, content, ...}`) to LangChain messages; a message without an id gets a UUID
 * and server-owned `additional_kwargs` keys are removed.
 * @param where Path used in errors, e.g. `input.messages`.
 * @throws BadRequestError "Invalid message at <where>[i]: ..." for an entry that is not a message.
 */
export function toMessages(messages: Record<string, unknown>[], where = "input.messages"): BaseMessage[] {
  return messages.map((raw, i) => {
    const entry = { ...raw };
    if (entry.additional_kwargs && typeof entry.additional_kwargs === "object") {
      const kwargs = { ...(entry.additional_kwargs as Record<string, unknown>) };
      for (const k of SERVER_OWNED_MESSAGE_KWARGS) delete kwargs[k];
      entry.additional_kwargs = kwargs;
    }
    if (typeof entry.id !== "string" || !entry.id) entry.id = randomUUID();
    let message: BaseMessage;
    try {
      // Checked here: a bad content shape would be checkpointed and then break every later run of the thread.
      const problem = contentProblem(entry.content);
      if (problem) throw new Error(problem);
      message = coerceMessageLikeToMessage(entry as never);
      if (!isBaseMessage(message)) throw new Error("not a message");
    } catch (err) {
      throw new BadRequestError(`Invalid message at ${where}[${i}]: ${(err as Error).message.split("\n")[0]}`);
    }
    return message;
  });
}

/**
 * The graph input of a run: a resume `Command`, or `input` with its messages converted (see {@link toMessages}).
 * @throws BadRequestError for a malformed message.
 */
export function toGraphInput(request: Pick<RunRequest, "command" | "input">): unknown {
  if (request.command && "resume" in request.command) return new Command({ resume: request.command.resume });
  if (!request.input) return null;
  const { messages, ...rest } = request.input;
  if (!messages) return rest;
  return { ...rest, messages: toMessages(messages) };
}
