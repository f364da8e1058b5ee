// Port of DeerFlow agents/middlewares/subagent_limit_middleware.py (SubagentLimitMiddleware).
import { AIMessage } from "@langchain/core/messages";
import { StateSchema } from "@langchain/langgraph";
import type { ModelRequest } from "langchain";
import { getLogger } from "../../logger.js";
import { ThreadStateFields, type Delegation } from "../thread-state.js";
import { DeerflowMiddleware } from "./base.js";
import { recordStopReason, rewriteAiMessage } from "./message-utils.js";
import { resolveRunScope, RunScopedStore } from "./run-scope.js";
import { runContextOf, type RuntimeLike } from "../run-context.js";

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.trunc(n)));

/** Options of {@link SubagentLimitMiddleware}. */
export interface SubagentLimitOptions {
  /** `task` calls allowed in one model response, clamped to 1-4. Default 3. */
  maxConcurrent?: number;
  /** `task` calls allowed in one run, clamped to 1-50. Default 6. */
  maxTotal?: number;
}

/** State keys of SubagentLimitMiddleware (one instance for every build: zod compiles a parser per instance). */
const SubagentLimitStateSchema = new StateSchema({ delegations: ThreadStateFields.delegations });

/**
 * Caps subagent delegation. On each model response with `task` calls: prior usage is the number of distinct
 * delegations of this run — `delegations` entries whose `run_id` is the context's `run_id` (all entries, with a
 * warning, when the context has none) plus the `task` calls this middleware already let through in the run —
 * and `allowed = min(maxConcurrent, maxTotal - prior)`. The first `allowed` task calls are kept, every other tool
 * call is kept, raw provider tool calls follow, and the finish reason becomes `stop` only when no call remains.
 * When the run total is what limits, a visible "[SUBAGENT LIMIT REACHED]" paragraph is appended and the stop
 * reason `subagent_limit_capped` is recorded in the context (when writable).
 * Hook: wrapModelCall (post-processing the response; DeerFlow uses after_model). No graph node is added.
 */
export class SubagentLimitMiddleware extends DeerflowMiddleware {
  readonly name = "SubagentLimitMiddleware";
  readonly stateSchema = SubagentLimitStateSchema;
  readonly maxConcurrent: number;
  readonly maxTotal: number;
  private readonly seen = new RunScopedStore<Set<string>>(() => new Set());

  constructor(options: SubagentLimitOptions = {}) {
    super();
    this.maxConcurrent = clamp(options.maxConcurrent ?? 3, 1, 4);
    this.maxTotal = clamp(options.maxTotal ?? 6, 1, 50);
  }

  /**
   * The response with excess `task` calls removed (or the same object when within limits).
   * @param delegations The thread's `delegations`. @param runtime Supplies `run_id` and the writable context.
   */
  limit(response: AIMessage, delegations: readonly Delegation[], runtime: RuntimeLike | undefined, messages: Parameters<typeof resolveRunScope>[1] = []): AIMessage {
    const calls = response.tool_calls ?? [];
    const tasks = calls.filter((c) => c.name === "task");
    if (!tasks.length) return response;
    const ctx = runContextOf(runtime).raw;
    const runId = ctx.run_id;
    if ((runId === undefined || runId === null || runId === "") && delegations.length) {
      getLogger().warn("SubagentLimitMiddleware received no run_id in the runtime context; counting all thread delegations");
    }
    const seen = this.seen.get(resolveRunScope(runtime, messages));
    const prior = new Set([...delegations.filter((d) => !runId || d.run_id === runId).map((d) => d.id), ...seen]);
    const remaining = Math.max(0, this.maxTotal - prior.size);
    const allowed = Math.min(this.maxConcurrent, remaining);
    const keptTasks = new Set(tasks.slice(0, allowed));
    for (const t of keptTasks) if (t.id) seen.add(t.id);
    if (keptTasks.size === tasks.length) return response;
    const totalBound = remaining < tasks.length && remaining < this.maxConcurrent;
    getLogger().warn({ requested: tasks.length, allowed, prior: prior.size }, "SubagentLimitMiddleware dropped task calls over the limit");
    if (totalBound) recordStopReason(ctx, "subagent_limit_capped");
    return rewriteAiMessage(response, {
      toolCalls: calls.filter((c) => c.name !== "task" || keptTasks.has(c)),
      append: totalBound
        ? `[SUBAGENT LIMIT REACHED] This run has used its subagent delegation limit (${this.maxTotal} \`task\` calls per run). ` +
          "Continue without delegating: finish the work yourself with what you have."
        : undefined,
      metadata: totalBound ? { stop_reason: "subagent_limit_capped" } : undefined,
    });
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const response = await handler(request);
    if (!AIMessage.isInstance(response)) return response as never;
    const state = request.state as { messages?: never[]; delegations?: Delegation[] } | undefined;
    return this.limit(response, state?.delegations ?? [], request.runtime as RuntimeLike, state?.messages ?? request.messages) as never;
  }
}
