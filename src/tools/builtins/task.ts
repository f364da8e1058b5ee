// Port of DeerFlow tools/builtins/task_tool.py (task): delegate work to a subagent.
import { createHash } from "node:crypto";
import { ToolMessage } from "@langchain/core/messages";
import { tool } from "langchain";
import { z } from "zod";
import { toolCallIdOf } from "./write-todos.js";

/** Arguments of `task`. */
export const TaskSchema = z.object({
  description: z.string().describe("A short (3-5 word) description of the task"),
  prompt: z.string().describe("The full task for the subagent: context, goal, expected output"),
  subagent_type: z.string().default("general-purpose").describe("Which subagent runs the task"),
});
/** Input of one `task` call. */
export type TaskInput = z.infer<typeof TaskSchema>;

/** What a subagent run produced: its final answer and the tokens it used. */
export interface SubagentResult {
  result: string;
  /** Token usage summed over the subagent's model calls (folded into the parent's usage by TokenUsageMiddleware). */
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number };
  /** The model the subagent ran on, when known. */
  modelName?: string;
}

/**
 * Runs subagents for the `task` tool. `types` are the subagent types it accepts; `run` executes one task and
 * returns the subagent's final answer (a string, or a {@link SubagentResult} with usage). The lead agent's
 * runtime is `LeadSubagentRuntime` (agents/lead-agent/subagent-runtime.ts).
 */
export interface SubagentRuntime {
  types: readonly string[];
  /** @param input The call's arguments. @param config The tool's runtime config (signal, context, metadata, writer). */
  run(input: TaskInput, config: unknown): Promise<string | SubagentResult>;
}

/** Text of the error result when no subagent runtime is configured. */
export function missingSubagentRuntimeMessage(subagentType: string): string {
  return (
    `Error: the task tool cannot start the '${subagentType}' subagent: no subagent runtime (SubagentRuntime) is configured ` +
    "for this agent, so no subagent was run. Do the work yourself with the tools you have."
  );
}

const failed = (content: string, config: unknown) =>
  new ToolMessage({ content, tool_call_id: toolCallIdOf(config), name: "task", status: "error", additional_kwargs: { subagent_status: "failed" } });

/** Upstream SUBAGENT_METADATA_TEXT_MAX_CHARS: the longest `subagent_result_brief`, in characters. */
const RESULT_BRIEF_MAX_CHARS = 2000;

/**
 * Upstream's completed-result metadata: `subagent_result_brief` (the trimmed result; over 2,000 characters, its first
 * two thirds and its end around a `\n...\n` marker) and `subagent_result_sha256` (hex SHA-256 of the whole result).
 * The web app's subtask card shows the brief; none for a blank result.
 */
export function resultBrief(result: string): Record<string, string> {
  const text = result.trim();
  if (!text) return {};
  const marker = "\n...\n";
  const head = Math.floor((RESULT_BRIEF_MAX_CHARS * 2) / 3);
  const brief = text.length <= RESULT_BRIEF_MAX_CHARS ? text : `${text.slice(0, head)}${marker}${text.slice(-(RESULT_BRIEF_MAX_CHARS - head - marker.length))}`;
  return { subagent_result_brief: brief, subagent_result_sha256: createHash("sha256").update(result).digest("hex") };
}

/**
 * Creates the `task` tool. With a `runtime`, an unknown `subagent_type` fails listing the available types, and a
 * known one runs and answers "Task Succeeded. Result: <answer>" (with `subagent_status: completed` and the
 * subagent's `subagent_usage` in `additional_kwargs`). Without a runtime every call returns an error
 * result (status `error`, `subagent_status: failed`) naming the missing subagent runtime: nothing is faked.
 * Exceptions from the runtime propagate (ToolErrorHandlingMiddleware formats them as "Task failed. Error: ...").
 */
export function createTaskTool(runtime?: SubagentRuntime) {
  return tool(
    async (input, config) => {
      if (!runtime) return failed(missingSubagentRuntimeMessage(input.subagent_type), config);
      if (!runtime.types.includes(input.subagent_type)) {
        return failed(`Task failed. Error: unknown subagent type '${input.subagent_type}'. Available subagent types: ${runtime.types.join(", ") || "(none)"}.`, config);
      }
      const out = await runtime.run(input, config);
      const { result, usage, modelName } = typeof out === "string" ? { result: out, usage: undefined, modelName: undefined } : out;
      return new ToolMessage({
        content: `Task Succeeded. Result: ${result}`,
        tool_call_id: toolCallIdOf(config),
        name: "task",
        // `subagent_usage` feeds TokenUsageMiddleware; `subagent_token_usage` / `subagent_model_name` are what the
        // web app's subtask card reads from a finished task (upstream SUBAGENT_TOKEN_USAGE_KEY / _MODEL_NAME_KEY).
        additional_kwargs: {
          subagent_status: "completed",
          ...resultBrief(result),
          ...(usage ? { subagent_usage: usage, subagent_token_usage: usage } : {}),
          ...(modelName ? { subagent_model_name: modelName } : {}),
        },
      });
    },
    {
      name: "task",
      description:
        "Delegate a self-contained task to a subagent that works in its own context and returns a final report. " +
        "Use it for independent, multi-step work; give the subagent everything it needs in `prompt`.",
      schema: TaskSchema,
    },
  );
}
