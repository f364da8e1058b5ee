// Port of DeerFlow's write_todos (langchain TodoListMiddleware's tool, with DeerFlow's short SDK description).
import { ToolMessage } from "@langchain/core/messages";
import { Command } from "@langchain/langgraph";
import { tool } from "langchain";
import { z } from "zod";

/** Statuses a todo can have. */
export const TODO_STATUSES = ["pending", "in_progress", "completed"] as const;

/** Arguments of `write_todos`: the whole new list. */
export const WriteTodosSchema = z.object({
  todos: z.array(z.object({ content: z.string().describe("What to do"), status: z.enum(TODO_STATUSES).describe("pending, in_progress or completed") }))
    .describe("The complete, updated todo list (it replaces the previous one)"),
});

/** Default tool description (DeerFlow `factory.py` SDK variant: short). */
export const WRITE_TODOS_DESCRIPTION =
  "Create or update the todo list for a multi-step task. Pass the complete list every time; mark an item " +
  "in_progress when you start it and completed as soon as it is done. Skip it for simple one- or two-step requests.";

/** The id of the tool call being executed, from a LangChain tool's runtime config. */
export function toolCallIdOf(config: unknown): string {
  const c = (config ?? {}) as { toolCall?: { id?: string }; toolCallId?: string };
  return c.toolCall?.id ?? c.toolCallId ?? "";
}

/**
 * Creates `write_todos`: replaces the `todos` state channel with the given list and answers
 * "Updated todo list to <json>". Used by TodoMiddleware (plan mode).
 * @param description Tool description shown to the model.
 */
export function createWriteTodosTool(description: string = WRITE_TODOS_DESCRIPTION) {
  return tool(
    async ({ todos }, config) =>
      new Command({
        update: {
          todos,
          messages: [new ToolMessage({ content: `Updated todo list to ${JSON.stringify(todos)}`, tool_call_id: toolCallIdOf(config), name: "write_todos" })],
        },
      }),
    { name: "write_todos", description, schema: WriteTodosSchema },
  );
}
