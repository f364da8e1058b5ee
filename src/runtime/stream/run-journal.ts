// DeerFlow's run journal (runtime/journal.py RunJournal, runtime/events/catalog.py): the catalog events of one run,
// recorded in the run's event log next to the SSE copies and the `subagent.*` events: `run.start`, `run.end` /
// `run.error` / `run.cancel`, `llm.human.input`, `llm.ai.response` (model, usage, latency), `llm.tool.result`,
// `llm.error`, and `middleware:{tag}` from the middlewares that report a decision (agents/run-journal-sink.ts).
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { Serialized } from "@langchain/core/load/serializable";
import type { LLMResult } from "@langchain/core/outputs";
import type { MiddlewareEvent, RunJournalSink } from "../../agents/run-journal-sink.js";
import { serializeMessage } from "../wire/serialization.js";

/** Where the journal writes (the run event log's `append`). */
export interface JournalLog {
  append(runId: string, event: { event_type: string; category: string; content: unknown; metadata: Record<string, unknown> }): void;
}

/** The run a journal belongs to. */
export interface JournalRun {
  runId: string;
  threadId: string;
  assistantId: string;
  /** 1, or the resume attempt (docs/durable-runs.md). */
  attempt: number;
}

/** Token totals of a finished run, as the Run JSON carries them (worker `runCounters`). */
export type RunTotals = Record<string, unknown>;

/** Metadata key the lead agent puts its configured model name under (observability/run-observer.ts). */
const MODEL_NAME_KEY = "deerflow_model";

/** A message as upstream's `model_dump()`: flat fields, `type` `human|ai|tool|...` (a streamed chunk is `ai`). */
const dump = (message: BaseMessage): Record<string, unknown> => ({ ...serializeMessage(message), type: message.getType() });

/** Upstream `_identify_caller`: the first `subagent:*` or `middleware:*` tag, else the lead agent. */
const callerOf = (tags: string[] | undefined): string => tags?.find((t) => t.startsWith("subagent:") || t.startsWith("middleware:") || t === "lead_agent") ?? "lead_agent";

/** Usage of a model result: the message's `usage_metadata`, else the provider's `llmOutput.tokenUsage`. */
function usageOf(message: BaseMessage | undefined, output: LLMResult): Record<string, unknown> {
  const meta = (message as { usage_metadata?: Record<string, unknown> } | undefined)?.usage_metadata;
  if (meta && typeof meta === "object") return { ...meta };
  const usage = output.llmOutput?.tokenUsage as { promptTokens?: number; completionTokens?: number; totalTokens?: number } | undefined;
  if (!usage) return {};
  const input = usage.promptTokens ?? 0;
  const outputTokens = usage.completionTokens ?? 0;
  return { input_tokens: input, output_tokens: outputTokens, total_tokens: usage.totalTokens ?? input + outputTokens };
}

/** Whether a human message is one the user wrote (not a hidden summary, loop warning or reminder). */
const isUserInput = (m: BaseMessage): boolean => m.getType() === "human" && m.name !== "summary" && m.name !== "loop_warning" && (m.additional_kwargs as { hide_from_ui?: unknown })?.hide_from_ui !== true;

/**
 * The journal of one run: a LangChain callback handler on the run's graph (model calls, tool results) plus the
 * worker's lifecycle calls ({@link start}, {@link end}) and the middlewares' {@link recordMiddleware}. Everything
 * goes into the run's buffered event log, so a run still costs one database write at its end. Never throws.
 */
export class RunJournal extends BaseCallbackHandler implements RunJournalSink {
  name = "deerflow_run_journal";
  // Chain events fire several times per graph step; the worker reports the run's start and end itself.
  override ignoreChain = true;
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;
  // Called in line, not in LangChain's background queue: every model event is in the log before the run's end.
  override awaitHandlers = true;
  private readonly calls = new Map<string, { startedAt: number; index: number; model: string | null }>();
  private callIndex = 0;
  private humanInputRecorded = false;
  private readonly startedAt = performance.now();
  /** Set by {@link end}: the run's events are written, a late callback must not reopen its numbering. */
  private ended = false;

  constructor(
    private readonly log: JournalLog,
    private readonly run: JournalRun,
  ) {
    super();
  }

  private put(event_type: string, category: string, content: unknown, metadata: Record<string, unknown> = {}): void {
    if (this.ended) return;
    try {
      this.log.append(this.run.runId, { event_type, category, content, metadata });
    } catch {
      // The journal is an audit copy: it never breaks the run.
    }
  }

  /** `run.start` (upstream: the root chain's start): content `{chain}`, metadata the caller, ids and attempt. */
  start(): void {
    const { runId, threadId, assistantId, attempt } = this.run;
    this.put("run.start", "trace", { chain: assistantId }, { caller: "lead_agent", run_id: runId, thread_id: threadId, assistant_id: assistantId, attempt });
  }

  /**
   * The run's last event: `run.end` (category `outputs`) for a success, `run.error` (category `error`, content the
   * message) for a failure, `run.cancel` (category `trace`) for a cancelled run; each with `status`, `duration_ms`
   * and the run's token totals in its metadata (and in the content of `run.end` and `run.cancel`).
   */
  end(status: string, error: string | undefined, totals: RunTotals, errorType?: string): void {
    const summary = { status, duration_ms: Math.round(performance.now() - this.startedAt), usage: totals };
    if (status === "success") this.put("run.end", "outputs", summary, { status });
    else if (status === "error") this.put("run.error", "error", error ?? "", { ...summary, error_type: errorType ?? "Error" });
    else this.put("run.cancel", "trace", summary, { status });
    this.ended = true;
  }

  recordMiddleware(tag: string, event: MiddlewareEvent): void {
    this.put(`middleware:${tag}`, "middleware", { name: event.name, hook: event.hook, action: event.action, changes: event.changes });
  }

  override handleChatModelStart(_llm: Serialized, messages: BaseMessage[][], runId: string, _parent?: string, extra?: Record<string, unknown>, tags?: string[], metadata?: Record<string, unknown>): void {
    const params = extra?.invocation_params as { model?: unknown; model_name?: unknown } | undefined;
    const model = metadata?.[MODEL_NAME_KEY] ?? params?.model ?? params?.model_name;
    this.calls.set(runId, { startedAt: performance.now(), index: ++this.callIndex, model: typeof model === "string" ? model : null });
    if (this.humanInputRecorded || callerOf(tags) !== "lead_agent") return;
    // The user's message of this run: the last one the user wrote in the lead agent's first model call.
    const input = messages.flat().filter(isUserInput).at(-1);
    if (!input) return;
    this.humanInputRecorded = true;
    this.put("llm.human.input", "message", dump(input), { caller: "lead_agent" });
  }

  override handleLLMEnd(output: LLMResult, runId: string, _parent?: string, tags?: string[]): void {
    const call = this.calls.get(runId);
    this.calls.delete(runId);
    const index = call?.index ?? ++this.callIndex;
    for (const generation of output.generations.flat()) {
      const message = (generation as { message?: unknown }).message;
      if (!isBaseMessage(message)) continue;
      const meta = message.response_metadata as { model_name?: unknown; model?: unknown } | undefined;
      const model = call?.model ?? (typeof meta?.model_name === "string" ? meta.model_name : typeof meta?.model === "string" ? meta.model : null);
      this.put("llm.ai.response", "message", dump(message), {
        caller: callerOf(tags),
        model_name: model,
        usage: usageOf(message, output),
        latency_ms: call ? Math.round(performance.now() - call.startedAt) : null,
        llm_call_index: index,
      });
    }
  }

  override handleLLMError(err: unknown, runId: string, _parent?: string, tags?: string[]): void {
    const call = this.calls.get(runId);
    this.calls.delete(runId);
    this.put("llm.error", "trace", err instanceof Error ? err.message : String(err), { caller: callerOf(tags), model_name: call?.model ?? null, llm_call_index: call?.index ?? null });
  }

  /** A tool's result: its ToolMessage, or the messages of the Command it returned. */
  override handleToolEnd(output: unknown): void {
    const messages = isBaseMessage(output) ? [output] : ((output as { update?: { messages?: unknown } } | null)?.update?.messages ?? []);
    if (!Array.isArray(messages)) return;
    for (const m of messages) if (isBaseMessage(m) && m.getType() === "tool") this.put("llm.tool.result", "message", dump(m));
  }
}
