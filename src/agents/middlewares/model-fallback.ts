// Model fallback chains (a model entry's `fallbacks: [names]`): when a model call fails with a transient provider
// error before its first token, the call continues on the next model of the chain. No upstream counterpart
// (DeerFlow has none); langchain's modelFallbackMiddleware falls back on any error, even after tokens were
// streamed, which would show the client two answers, hence this one.
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { classifyProviderError, FALLBACK_FAILURES } from "../../models/provider-errors.js";
import { currentRunScope, type ModelFallbackRecord } from "../../observability/run-scope.js";
import { DeerflowMiddleware } from "./base.js";
import { resolveRunScope, RunScopedStore, type RuntimeLike } from "./run-scope.js";

/** The `custom` stream event written when a run switches models (`stream_mode` must include `custom`). */
export interface ModelFallbackEvent extends ModelFallbackRecord {
  type: "model_fallback";
}

/** Options of {@link ModelFallbackMiddleware}. */
export interface ModelFallbackOptions {
  /** Config name of the run's model (the chain's head). */
  primary: string;
  /** Config names to try after it, in order (the entry's `fallbacks`). */
  fallbacks: readonly string[];
  /** Builds a fallback model by config name (thinking and model settings as the run's). */
  build: (name: string) => Promise<BaseChatModel>;
}

/**
 * Falls back along a model's `fallbacks` chain. A failed call moves on to the next model when the failure is a
 * connection error, a timeout, a 429 or a 5xx ({@link FALLBACK_FAILURES}, after the failing model's own retries)
 * and the failing call streamed no token yet (counted by the run scope); anything else (4xx, a cancelled run, an
 * error after tokens) is rethrown. Each switch is logged, counted (`deerflow_model_fallbacks_total`), recorded in
 * the run's metadata (`model_fallbacks`) and written as a `custom` stream event `{type: "model_fallback", from, to,
 * reason, status?}`. The switch sticks for the rest of the run (kept per run, so an instance shared by concurrent runs
 * never moves another run): later calls start on the model that last answered.
 * A fallback that cannot be built (unknown name, bad `use:`) is skipped with a warning. Hook: wrapModelCall,
 * placed innermost but for SafetyFinishReason and Clarification, so only the provider call is repeated.
 */
export class ModelFallbackMiddleware extends DeerflowMiddleware {
  readonly name = "ModelFallbackMiddleware";
  /** Per run: index in the chain (0 = primary) of the model calls start on. One instance serves many runs. */
  private readonly active = new RunScopedStore<{ index: number }>(() => ({ index: 0 }));
  private readonly chain: string[];
  private readonly models = new Map<string, BaseChatModel>();

  constructor(private readonly options: ModelFallbackOptions) {
    super();
    this.chain = [options.primary, ...options.fallbacks.filter((n) => n !== options.primary)];
  }

  private async modelAt(index: number, request: ModelRequest): Promise<BaseChatModel> {
    if (index === 0) return request.model as BaseChatModel;
    const name = this.chain[index];
    let model = this.models.get(name);
    if (!model) {
      model = await this.options.build(name);
      this.models.set(name, model);
    }
    return model;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const scope = currentRunScope();
    const log = scope?.log ?? getLogger();
    const active = this.active.get(resolveRunScope(request.runtime as RuntimeLike, request.state?.messages ?? request.messages));
    let index = active.index;
    let current = request;
    if (index > 0) current = { ...request, model: (await this.modelAt(index, request)) as never };
    for (;;) {
      const streamedBefore = scope?.tokensStreamed ?? 0;
      try {
        const response = await handler(current);
        active.index = index;
        return response as never;
      } catch (err) {
        const { failure, status } = classifyProviderError(err);
        const streamed = (scope?.tokensStreamed ?? 0) > streamedBefore;
        if (!FALLBACK_FAILURES.has(failure) || streamed || request.runtime?.signal?.aborted) throw err;
        let next = index + 1;
        let model: BaseChatModel | null = null;
        for (; next < this.chain.length && !model; next++) {
          try {
            model = await this.modelAt(next, request);
          } catch (buildErr) {
            log.warn({ model: this.chain[next], err: (buildErr as Error).message }, `fallback model '${this.chain[next]}' cannot be built; skipping it`);
          }
        }
        if (!model) throw err;
        next -= 1;
        const record: ModelFallbackRecord = { from: this.chain[index], to: this.chain[next], reason: failure, ...(status !== undefined ? { status } : {}) };
        log.warn({ ...record, err: (err as Error).message }, `model '${record.from}' failed (${failure}) before its first token; continuing on '${record.to}'`);
        scope?.fallbacks.push(record);
        scope?.metrics?.modelFallbacks.inc({ from: record.from, to: record.to, reason: failure });
        const writer = (request.runtime as { writer?: (chunk: unknown) => void } | undefined)?.writer;
        writer?.({ type: "model_fallback", ...record } satisfies ModelFallbackEvent);
        index = next;
        current = { ...request, model: model as never };
      }
    }
  }
}
