// Port of DeerFlow agents/middlewares/todo_middleware.py (TodoMiddleware, on langchain's todo-list middleware).
import { AIMessage, RemoveMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, REMOVE_ALL_MESSAGES, StateSchema } from "@langchain/langgraph";
import type { ModelRequest, ToolCallHandler } from "langchain";
import { createWriteTodosTool, WRITE_TODOS_DESCRIPTION } from "../../tools/builtins/write-todos.js";
import { ThreadStateFields, type Todo } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";
import { hasToolCallIntent, hiddenHumanMessage } from "./message-utils.js";
import { resolveRunScope, RunScopedStore, type RuntimeLike } from "./run-scope.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

/** The short todo system prompt of the SDK (DeerFlow `factory.py` `_SDK_TODO_SYSTEM_PROMPT`). */
export const SDK_TODO_SYSTEM_PROMPT =
  "## `write_todos`\nFor tasks with three or more steps, keep a todo list with `write_todos`: write it before you start, " +
  "keep exactly the current step in_progress, and mark each step completed as soon as it is done. Never call " +
  "`write_todos` more than once in the same response. Finish every step before giving your final answer.";
/** Completion reminders per run before the agent may stop with open todos (DeerFlow: 2). */
export const MAX_COMPLETION_REMINDERS = 2;
const PARALLEL_ERROR = "Error: The `write_todos` tool should never be called multiple times in parallel. Please call it only once per model invocation to update the todo list.";

/** Options of {@link TodoMiddleware}. */
export interface TodoMiddlewareOptions {
  /** Appended to the system message on every model call. */
  systemPrompt?: string;
  /** Description of the `write_todos` tool. */
  toolDescription?: string;
}

const formatTodos = (todos: readonly Todo[]) => todos.map((t) => `- [${t.status}] ${t.content}`).join("\n");

/** State keys of TodoMiddleware (one instance for every build: zod compiles a parser per instance). */
const TodoStateSchema = new StateSchema({ todos: ThreadStateFields.todos });

/**
 * Plan mode. Brings the `write_todos` tool (it replaces the `todos` channel), appends the todo system prompt to
 * every model request, and answers parallel `write_todos` calls of one response with an error result each.
 * DeerFlow's additions: when `todos` exist but no `write_todos` call is visible in the request (e.g. after
 * summarization), a hidden human message named `todo_reminder` lists them (`- [status] content`); when the model
 * gives a final answer (no tool-call intent) while some todo is not completed, the answer is kept and the model is
 * asked again, in the same model step, with a hidden human message named `todo_completion_reminder` listing only
 * the incomplete items — at most 2 times per run (thread and run id), every answer persisted in order. Both reminders are request-only, never persisted.
 * Hooks: wrapModelCall and wrapToolCall (DeerFlow jumps back to the model from after_model; langchain's JS router
 * does not jump after a final answer, so the retry happens inside the model call; no graph node is added).
 */
export class TodoMiddleware extends DeerflowMiddleware {
  readonly name = "TodoMiddleware";
  readonly stateSchema = TodoStateSchema;
  readonly tools: ReturnType<typeof createWriteTodosTool>[];
  readonly systemPrompt: string;
  private readonly reminders = new RunScopedStore<{ sent: number }>(() => ({ sent: 0 }));

  constructor(options: TodoMiddlewareOptions = {}) {
    super();
    this.systemPrompt = options.systemPrompt ?? SDK_TODO_SYSTEM_PROMPT;
    this.tools = [createWriteTodosTool(options.toolDescription ?? WRITE_TODOS_DESCRIPTION)];
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const state = request.state as { messages?: BaseMessage[]; todos?: Todo[] | null } | undefined;
    const todos = state?.todos ?? [];
    let messages = request.messages;
    const writeVisible = messages.some((m) => AIMessage.isInstance(m) && m.tool_calls?.some((c) => c.name === "write_todos"));
    if (todos.length && !writeVisible && !messages.some((m) => m.name === "todo_reminder")) {
      messages = [...messages, hiddenHumanMessage(`Your todo list (kept from earlier in this conversation):\n${formatTodos(todos)}`, "todo_reminder")];
    }
    const outgoing = { ...request, messages, systemMessage: request.systemMessage.concat(`\n\n${this.systemPrompt}`) };
    let response = await handler(outgoing);
    const open = todos.filter((t) => t.status !== "completed");
    if (open.length === 0) return response as never;
    const run = this.reminders.get(resolveRunScope(request.runtime as RuntimeLike, state?.messages ?? request.messages));
    const answers: AIMessage[] = [];
    while (AIMessage.isInstance(response) && !hasToolCallIntent(response) && run.sent < MAX_COMPLETION_REMINDERS) {
      run.sent++;
      answers.push(response);
      const reminder = hiddenHumanMessage(
        `You still have unfinished todos:\n${formatTodos(open)}\nContinue working on them, or update the list with write_todos if they are no longer needed.`,
        "todo_completion_reminder",
      );
      response = await handler({ ...outgoing, messages: [...outgoing.messages, ...answers, reminder] });
    }
    if (!answers.length || !AIMessage.isInstance(response)) return response as never;
    // Keep every premature answer in the history before the continuation. The model node always records its last
    // message first, so the whole list is rewritten in order.
    for (const a of answers) a.name ??= response.name;
    const history = state?.messages ?? request.messages;
    return new Command({ update: { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...history, ...answers, response] } }) as never;
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    if (request.toolCall.name !== "write_todos") return handler(request);
    const messages = (request.state?.messages ?? []) as BaseMessage[];
    const lastAi = [...messages].reverse().find((m) => AIMessage.isInstance(m)) as AIMessage | undefined;
    if ((lastAi?.tool_calls ?? []).filter((c) => c.name === "write_todos").length > 1) {
      return new ToolMessage({ content: PARALLEL_ERROR, tool_call_id: request.toolCall.id ?? "", name: "write_todos", status: "error" });
    }
    return handler(request);
  }
}
