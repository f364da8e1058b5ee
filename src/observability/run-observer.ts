// Watches one run for the operator: counts and times it in the metrics, and follows its model calls through a
// langchain callback handler (time to first token, tokens, errors) and the run scope (logger, fallback records).
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { SpanKind, SpanStatusCode, type Span } from "@opentelemetry/api";
import type { Serialized } from "@langchain/core/load/serializable";
import type { LLMResult } from "@langchain/core/outputs";
import type { Logger } from "pino";
import { classifyProviderError } from "../models/provider-errors.js";
import type { GatewayMetrics } from "./metrics.js";
import type { RunScope } from "./run-scope.js";
import { failSpan, startChildSpan, startRunSpan, type GatewayTracing } from "./tracing.js";

/** Metadata key under which createChatModel names a model's config entry (the `model` label of the metrics). */
export const MODEL_NAME_METADATA_KEY = "deerflow_model";

/** Tokens of one model call, as the provider reported them. */
export interface TokenCount {
  input: number;
  output: number;
}

/** What a run observer is told when a run is admitted. */
export interface RunInfo {
  runId: string;
  threadId: string;
  assistantId: string;
  userId: string;
  requestId?: string;
  /** The run's logger (run, thread and request ids bound). */
  log: Logger;
}

/** One run under observation (see {@link RunObserver.begin}). */
/**
 * A run's model calls and tokens so far, by caller (DeerFlow RunJournal): calls tagged `subagent:<type>` count as
 * subagent tokens, `middleware:<name>` as middleware tokens, everything else as the lead agent's.
 */
export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  calls: number;
  leadAgentTokens: number;
  subagentTokens: number;
  middlewareTokens: number;
}

export interface RunObservation {
  /** The run scope to execute the worker in (withRunScope). */
  scope: RunScope;
  /** Model calls and tokens of the run so far. */
  usage: RunUsage;
  /** Callback handlers to add to the run's config (model calls and tokens). */
  callbacks: BaseCallbackHandler[];
  /** The worker began executing (after its predecessors on the thread). */
  started(): void;
  /** The run ended with `status`; counted only when {@link started} was called. Idempotent. */
  finished(status: string): void;
}

/** Creates an observation per run. */
export interface RunObserver {
  begin(info: RunInfo): RunObservation;
}

/** Options of {@link createRunObserver}. */
export interface RunObserverOptions {
  metrics: GatewayMetrics;
  /**
   * Called after every model call that reported usage (the token ledger). A failure, thrown or as a rejected promise,
   * is logged on the run's logger and does not fail the run.
   */
  onTokens?: (userId: string, tokens: TokenCount) => void | Promise<void>;
  /** OpenTelemetry tracing (a span per run, model call and tool call); off when absent. */
  tracing?: GatewayTracing;
}

const now = () => performance.now();

/** Input and output tokens of a model result: `llmOutput.tokenUsage`, else the messages' `usage_metadata`. */
export function tokensOf(output: LLMResult): TokenCount | null {
  const usage = output.llmOutput?.tokenUsage as { promptTokens?: number; completionTokens?: number } | undefined;
  if (usage && (usage.promptTokens || usage.completionTokens)) return { input: usage.promptTokens ?? 0, output: usage.completionTokens ?? 0 };
  let input = 0;
  let out = 0;
  let found = false;
  for (const batch of output.generations ?? []) {
    for (const gen of batch) {
      const meta = (gen as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number } } }).message?.usage_metadata;
      if (!meta) continue;
      found = true;
      input += meta.input_tokens ?? 0;
      out += meta.output_tokens ?? 0;
    }
  }
  return found ? { input, output: out } : null;
}

/**
 * The callback handler of one run: remembers each model call's configured name (metadata
 * {@link MODEL_NAME_METADATA_KEY}, else the provider model id), observes the run's time to first token on the
 * first non-empty token or tool-call chunk, counts calls, tokens and errors by model. Awaited by langchain
 * (`awaitHandlers`), so the token count the fallback middleware reads is current when a call fails.
 */
class RunMetricsHandler extends BaseCallbackHandler {
  name = "deerflow_run_metrics";
  override awaitHandlers = true;
  // Model and tool events only: each chain event (several per graph step) would otherwise be dispatched here.
  override ignoreChain = true;
  override ignoreRetriever = true;
  override ignoreCustomEvent = true;
  private readonly models = new Map<string, string>();
  private readonly spans = new Map<string, Span>();
  /** The run's span (set when the worker starts and tracing is on): the parent of model and tool spans. */
  runSpan?: Span;
  private startedAt = now();
  private firstTokenSeen = false;

  constructor(
    private readonly info: RunInfo,
    private readonly scope: RunScope,
    private readonly options: RunObserverOptions,
  ) {
    super();
  }

  /** Restarts the TTFT clock when the worker begins (a queued run waits first). */
  markStart(): void {
    this.startedAt = now();
  }

  private label(runId: string): string {
    return this.models.get(runId) ?? "unknown";
  }

  override handleChatModelStart(_llm: Serialized, _messages: unknown, runId: string, _parent?: string, extra?: Record<string, unknown>, _tags?: string[], metadata?: Record<string, unknown>): void {
    const params = extra?.invocation_params as { model?: unknown } | undefined;
    const name = metadata?.[MODEL_NAME_METADATA_KEY] ?? params?.model ?? "unknown";
    this.models.set(runId, String(name));
    const { tracing } = this.options;
    if (!tracing) return;
    const providerModel = String(params?.model ?? name);
    this.spans.set(
      runId,
      startChildSpan(tracing, this.runSpan, `chat ${providerModel}`, SpanKind.CLIENT, {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": providerModel,
        "gen_ai.provider.name": String(metadata?.ls_provider ?? "unknown"),
        "deerflow.model": String(name),
      }),
    );
  }

  override handleToolStart(_tool: Serialized, _input: string, runId: string, _parent?: string, _tags?: string[], _metadata?: Record<string, unknown>, runName?: string, toolCallId?: string): void {
    const { tracing } = this.options;
    if (!tracing) return;
    const name = runName ?? "tool";
    this.spans.set(
      runId,
      startChildSpan(tracing, this.runSpan, `execute_tool ${name}`, SpanKind.INTERNAL, {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        ...(toolCallId ? { "gen_ai.tool.call.id": toolCallId } : {}),
      }),
    );
  }

  override handleToolEnd(_output: unknown, runId: string): void {
    this.spans.get(runId)?.end();
    this.spans.delete(runId);
  }

  override handleToolError(err: unknown, runId: string): void {
    const span = this.spans.get(runId);
    this.spans.delete(runId);
    if (span) failSpan(span, err);
  }

  override handleLLMNewToken(token: string, _idx: unknown, _runId: string, _parent?: string, _tags?: string[], fields?: { chunk?: unknown }): void {
    const chunk = (fields?.chunk as { message?: { tool_call_chunks?: unknown[] } } | undefined)?.message;
    if (!token && !chunk?.tool_call_chunks?.length) return;
    this.scope.tokensStreamed++;
    if (this.firstTokenSeen) return;
    this.firstTokenSeen = true;
    this.options.metrics.timeToFirstToken.observe({ assistant_id: this.info.assistantId }, (now() - this.startedAt) / 1000);
  }

  /** Model calls and tokens of this run, by caller. */
  readonly usage: RunUsage = { inputTokens: 0, outputTokens: 0, calls: 0, leadAgentTokens: 0, subagentTokens: 0, middlewareTokens: 0 };

  override handleLLMEnd(output: LLMResult, runId: string, _parent?: string, tags?: string[]): void {
    const model = this.label(runId);
    this.models.delete(runId);
    const { metrics, onTokens } = this.options;
    metrics.modelCalls.inc({ model });
    const tokens = tokensOf(output);
    this.usage.calls++;
    if (tokens) {
      this.usage.inputTokens += tokens.input;
      this.usage.outputTokens += tokens.output;
      const caller = tags?.find((t) => t.startsWith("subagent:") || t.startsWith("middleware:")) ?? "lead_agent";
      const key = caller.startsWith("subagent:") ? "subagentTokens" : caller.startsWith("middleware:") ? "middlewareTokens" : "leadAgentTokens";
      this.usage[key] += tokens.input + tokens.output;
    }
    const span = this.spans.get(runId);
    this.spans.delete(runId);
    if (span) {
      if (tokens) span.setAttributes({ "gen_ai.usage.input_tokens": tokens.input, "gen_ai.usage.output_tokens": tokens.output });
      span.end();
    }
    if (!tokens) return;
    metrics.modelTokens.inc({ model, direction: "input" }, tokens.input);
    metrics.modelTokens.inc({ model, direction: "output" }, tokens.output);
    const failed = (err: unknown) => this.info.log.error({ err: (err as Error).message }, "token usage could not be recorded");
    try {
      onTokens?.(this.info.userId, tokens)?.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  override handleLLMError(err: unknown, runId: string): void {
    const model = this.label(runId);
    this.models.delete(runId);
    const span = this.spans.get(runId);
    this.spans.delete(runId);
    if (span) failSpan(span, err);
    const { failure } = classifyProviderError(err);
    // A run cancelled by its client aborts the model call: not a provider failure.
    if ((err as { name?: unknown })?.name === "AbortError") return;
    this.options.metrics.modelErrors.inc({ model, reason: failure });
  }
}

/** The production {@link RunObserver}: metrics plus the token ledger hook. */
export function createRunObserver(options: RunObserverOptions): RunObserver {
  const { metrics } = options;
  return {
    begin(info) {
      const scope: RunScope = { runId: info.runId, threadId: info.threadId, requestId: info.requestId, log: info.log, tokensStreamed: 0, fallbacks: [], metrics };
      const handler = new RunMetricsHandler(info, scope, options);
      let startedAt: number | null = null;
      let done = false;
      return {
        scope,
        usage: handler.usage,
        callbacks: [handler],
        started() {
          if (startedAt !== null) return;
          startedAt = now();
          handler.markStart();
          if (options.tracing) handler.runSpan = startRunSpan(options.tracing, info);
          metrics.runsStarted.inc({ assistant_id: info.assistantId });
          metrics.activeRuns.inc();
        },
        finished(status) {
          if (done || startedAt === null) return;
          done = true;
          metrics.activeRuns.dec();
          metrics.runsFinished.inc({ assistant_id: info.assistantId, status });
          metrics.runDuration.observe({ assistant_id: info.assistantId, status }, (now() - startedAt) / 1000);
          const span = handler.runSpan;
          if (span) {
            span.setAttribute("deerflow.run.status", status);
            if (status === "error") span.setStatus({ code: SpanStatusCode.ERROR });
            for (const f of scope.fallbacks) span.addEvent("model_fallback", { from: f.from, to: f.to, reason: f.reason });
            span.end();
          }
        },
      };
    },
  };
}
