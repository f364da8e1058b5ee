// Port of DeerFlow subagents/executor.py (SubagentExecutor) for the `task` tool: the child agent is built by the
// lead-agent factory itself and streams its progress to the parent's `custom` stream.
import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { isAppConfig, type AppConfig } from "../../config/schema.js";
import { MiddlewareError } from "langchain";
import { buildRunContext, runContextOf } from "../run-context.js";
import { streamAgent, type StreamableAgent } from "../stream-agent.js";
import { getLogger } from "../../logger.js";
import type { SubagentResult, SubagentRuntime, TaskInput } from "../../tools/builtins/task.js";
import { toolCallIdOf } from "../../tools/builtins/write-todos.js";
import { textOf } from "../middlewares/message-utils.js";
import { getSubagentType, getSubagentTypes } from "./subagent-types.js";

/** DeerFlow's built-in subagent types (`bash` is offered only when host bash is allowed). */
export const SUBAGENT_TYPES = ["general-purpose", "bash"] as const;

/**
 * Thrown into a subagent run that outlived its type's `timeout_seconds`: the child is aborted and the task fails
 * with this message (upstream's wording, "Execution timed out after N seconds").
 */
export class SubagentTimeoutError extends Error {
  override readonly name = "SubagentTimeoutError";
  constructor(readonly subagentType: string, readonly timeoutSeconds: number) {
    super(`Subagent '${subagentType}' execution timed out after ${timeoutSeconds} seconds`);
  }
}

/** The factory that builds the child (the lead agent's `_makeLeadAgent`). */
export type SubagentFactory = (config: { context: Record<string, unknown>; configurable: Record<string, unknown>; metadata: Record<string, unknown> }, options: { appConfig: AppConfig }) => Promise<StreamableAgent>;

type ToolRuntimeConfig = {
  context?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  signal?: AbortSignal;
  writer?: (chunk: unknown) => void;
};

/** A compact form of a subagent message for `task_running` events: an AI turn with its tool calls, or a tool result. */
function describeMessage(m: AIMessage | ToolMessage): Record<string, unknown> {
  if (ToolMessage.isInstance(m)) return { type: "tool", id: m.id ?? null, name: m.name ?? null, tool_call_id: m.tool_call_id, content: textOf(m), status: m.status ?? "success" };
  return { type: "ai", id: m.id ?? null, content: textOf(m), tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id ?? null, name: c.name, args: c.args })) };
}

/** Options of {@link LeadSubagentRuntime}. */
export interface LeadSubagentRuntimeOptions {
  /** Builds the child agent (the lead-agent factory). */
  factory: SubagentFactory;
  /** App config of the parent build, used when the tool's context carries none. */
  appConfig: AppConfig;
  /** Recursion limit of a subagent run (default: the type's `max_turns`). */
  recursionLimit?: number;
}

/**
 * Runs `task` calls as child agents built by the lead-agent factory. The child inherits, through its context,
 * the parent's `app_config` (no config reload), thread and user (same workspace), model (`metadata.model_name`),
 * tool groups and skill allowlist (`metadata.tool_groups`, `metadata.available_skills`); it gets no `task` tool,
 * cannot ask clarification questions, writes no title and no memory. Progress goes to the parent's `custom`
 * stream through the LangGraph stream writer: `{type: "task_started", task_id, description, subagent_type}`,
 * `{type: "task_running", task_id, message, message_index, usage, model_name}` per new AI or tool message of the child,
 * `{type: "task_completed", task_id, result, usage, model_name}` or `{type: "task_failed", task_id, error, usage}`;
 * `usage` (`{input_tokens, output_tokens, total_tokens}`) is the child's cumulative spend so far, as upstream's
 * task tool reports it, so the web app's subtask card shows it. The parent's abort
 * signal stops the child. How many run at once is bounded by SubagentLimitMiddleware (per response and per run).
 * The requested type (see `getSubagentTypes`) decides the child's role, tools, skills, model, recursion limit
 * (`max_turns`) and deadline: past `timeout_seconds` the child is aborted through its AbortSignal, a `task_failed`
 * event carries the reason and the task fails with a {@link SubagentTimeoutError}.
 */
export class LeadSubagentRuntime implements SubagentRuntime {
  /** The types this build offers (see `getSubagentTypes`: built-ins, then `subagents.custom_agents`). */
  readonly types: readonly string[];

  constructor(private readonly options: LeadSubagentRuntimeOptions) {
    this.types = getSubagentTypes(options.appConfig).map((t) => t.name);
  }

  /** Builds and runs one subagent; resolves with its final answer and token usage. @throws what the child throws. */
  async run(input: TaskInput, config: unknown): Promise<SubagentResult> {
    const cfg = (config ?? {}) as ToolRuntimeConfig;
    const parent = cfg.context ?? {};
    const metadata = cfg.metadata ?? {};
    const taskId = toolCallIdOf(config) || randomUUID();
    const emit = (event: Record<string, unknown>) => {
      try {
        cfg.writer?.({ ...event, task_id: taskId });
      } catch {
        // Progress is best effort; a closed stream must not fail the task.
      }
    };
    const appConfig = isAppConfig(parent.app_config) ? parent.app_config : this.options.appConfig;
    const type = getSubagentType(appConfig, input.subagent_type);
    if (!type) throw new Error(`unknown subagent type '${input.subagent_type}'. Available subagent types: ${getSubagentTypes(appConfig).map((t) => t.name).join(", ")}`);
    const parentRun = runContextOf(cfg);
    const context = buildRunContext({
      threadId: parentRun.threadId ?? "",
      runId: parentRun.runId,
      userId: parentRun.userId,
      userRole: parentRun.userRole,
      appConfig,
      memoryManager: parentRun.memoryManager,
      sandboxProvider: parentRun.sandboxProvider,
      options: {
        model_name: type.model ?? metadata.model_name ?? parent.model_name,
        ...(typeof metadata.thinking_enabled === "boolean" ? { thinking_enabled: metadata.thinking_enabled } : {}),
        subagent_enabled: false,
        non_interactive: true,
        disable_clarification: true,
      },
      subagent: {
        type: input.subagent_type,
        tool_groups: Array.isArray(metadata.tool_groups) ? (metadata.tool_groups as string[]) : null,
        available_skills: type.skills ?? (Array.isArray(metadata.available_skills) ? (metadata.available_skills as string[]) : null),
      },
    });
    const childConfig = { context, configurable: { thread_id: context.thread_id }, metadata: {} as Record<string, unknown> };
    const requestedModel = type.model ?? metadata.model_name ?? parent.model_name;
    // The child stops on the parent's abort or on its own deadline, whichever comes first.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new SubagentTimeoutError(type.name, type.timeoutSeconds)), type.timeoutSeconds * 1000);
    timer.unref?.();
    const signal = cfg.signal ? AbortSignal.any([cfg.signal, deadline.signal]) : deadline.signal;
    let messages: BaseMessage[] = [];
    /** The child's token usage so far (sum over its AI messages) and the model that answered. */
    const progress = () => {
      const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
      let modelName = typeof requestedModel === "string" ? requestedModel : undefined;
      for (const m of messages) {
        if (!AIMessage.isInstance(m)) continue;
        usage.input_tokens += m.usage_metadata?.input_tokens ?? 0;
        usage.output_tokens += m.usage_metadata?.output_tokens ?? 0;
        usage.total_tokens += m.usage_metadata?.total_tokens ?? 0;
        const answered = m.response_metadata?.model_name;
        if (typeof answered === "string" && answered) modelName = answered;
      }
      return { usage, ...(modelName ? { model_name: modelName } : {}) };
    };
    emit({ type: "task_started", description: input.description, subagent_type: input.subagent_type, ...(typeof requestedModel === "string" ? { model_name: requestedModel } : {}) });
    try {
      const agent = await this.options.factory(childConfig, { appConfig });
      const resolved = (agent as { resolved?: { metadata?: Record<string, unknown>; callbacks?: unknown } }).resolved;
      const stream = await streamAgent(agent as StreamableAgent, { messages: [new HumanMessage(input.prompt)] }, {
        context,
        // The child runs inside the parent's tool call, so LangGraph would inherit the parent's abort signals from
        // the ambient config (`__pregel_abort_signals`) and never see this deadline: start the child's own set.
        configurable: { ...childConfig.configurable, __pregel_abort_signals: {} },
        metadata: { ...childConfig.metadata, ...(resolved?.metadata ?? {}) },
        callbacks: resolved?.callbacks as never,
        // DeerFlow's caller tag: the run's counters book these model calls as subagent tokens.
        tags: [`subagent:${input.subagent_type}`],
        streamMode: "values",
        signal,
        recursionLimit: this.options.recursionLimit ?? type.maxTurns,
      });
      const reported = new Set<string>();
      let index = 0;
      for await (const values of stream as AsyncIterable<{ messages?: BaseMessage[] }>) {
        messages = values.messages ?? messages;
        for (const m of messages) {
          // The child's AI turns and its tool results, as upstream streams them (the card shows both kinds of step).
          if (!(AIMessage.isInstance(m) || ToolMessage.isInstance(m)) || reported.has(m.id ?? String(messages.indexOf(m)))) continue;
          reported.add(m.id ?? String(messages.indexOf(m)));
          // Usage is cumulative (the child's whole spend so far): the app replaces its per-task total with it.
          emit({ type: "task_running", message: describeMessage(m), message_index: index++, ...progress() });
        }
      }
      const ais = messages.filter((m): m is AIMessage => AIMessage.isInstance(m));
      const result = textOf(ais.at(-1) ?? new AIMessage("")).trim() || "(the subagent finished without a final answer)";
      const { usage, model_name } = progress();
      emit({ type: "task_completed", result, usage, ...(model_name ? { model_name } : {}) });
      return { result, usage, ...(model_name ? { modelName: model_name } : {}) };
    } catch (err) {
      // langchain wraps errors raised under a middleware; the parent should see the child's own error.
      let root = err as Error;
      while (MiddlewareError.isInstance(root) && root.cause instanceof Error) root = root.cause;
      // An abort surfaces as an AbortError from the model client or the graph; name the real reason instead.
      if (deadline.signal.aborted && !cfg.signal?.aborted) root = deadline.signal.reason as SubagentTimeoutError;
      const message = root?.message ?? String(err);
      emit({ type: "task_failed", error: message, ...progress() });
      getLogger().warn({ task_id: taskId, err: message }, "subagent task failed");
      throw root;
    } finally {
      clearTimeout(timer);
    }
  }
}
