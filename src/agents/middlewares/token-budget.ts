// Port of DeerFlow agents/middlewares/token_budget_middleware.py (TokenBudgetMiddleware).
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { DeerflowMiddleware } from "./base.js";
import { recordStopReason, rewriteAiMessage } from "./message-utils.js";
import { resolveRunScope, RunScopedStore, type RunScope, type RuntimeLike } from "./run-scope.js";
import { TokenBudgetConfigSchema, type TokenBudgetConfig } from "./token-budget-options.js";

export { TokenBudgetConfigSchema, type TokenBudgetConfig };

interface BudgetRun {
  input: number;
  output: number;
  total: number;
  warned: boolean;
  pending: string | null;
  stopReason: string | null;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/**
 * Keeps a run within a token budget. Each model response's `usage_metadata` is added to the run's cumulative
 * input/output/total; the highest of total/`max_tokens`, input/`max_input_tokens` and output/`max_output_tokens`
 * decides. At `hard_stop_threshold` the response loses its tool calls and gets "[TOKEN BUDGET EXCEEDED] The <kind>
 * token usage (<used>) has exceeded the safety limit (<budget>). ..." appended; the run's stop reason becomes
 * `token_capped` ({@link consumeStopReason}, and `context.stop_reason` when writable). At `warn_threshold` one
 * warning per run, "[TOKEN BUDGET WARNING] You have used <used> of your <budget> <kind> token budget (<pct>%). ...",
 * is appended to the next request as a human message named `budget_warning`. Numbers use thousands separators.
 * Inert when `enabled` is false (the default, so `tokenBudget: true` installs an inert middleware, as upstream).
 * Hook: wrapModelCall only; only responses seen during the run count, so earlier runs never do. State is per
 * thread and run.
 */
export class TokenBudgetMiddleware extends DeerflowMiddleware {
  readonly name = "TokenBudgetMiddleware";
  readonly config: TokenBudgetConfig;
  private readonly runs = new RunScopedStore<BudgetRun>(() => ({ input: 0, output: 0, total: 0, warned: false, pending: null, stopReason: null }));

  /** @param config The `token_budget` section (partial). @throws ZodError for invalid limits. */
  constructor(config: Partial<TokenBudgetConfig> = {}) {
    super();
    this.config = TokenBudgetConfigSchema.parse(config);
  }

  /** `"token_capped"` once after a hard stop in the run `scope`, then null. */
  consumeStopReason(scope: RunScope): string | null {
    const run = this.runs.peek(scope);
    const reason = run?.stopReason ?? null;
    if (run) run.stopReason = null;
    return reason;
  }

  /** Adds `response`'s usage to the run and applies the limits; returns the (possibly replaced) response. */
  account(response: AIMessage, scope: RunScope, context?: unknown): AIMessage {
    const run = this.runs.get(scope);
    const usage = response.usage_metadata;
    if (!usage) return response;
    run.input += usage.input_tokens ?? 0;
    run.output += usage.output_tokens ?? 0;
    run.total += usage.total_tokens ?? (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
    const c = this.config;
    const checks: [string, number, number][] = [["total", run.total, c.max_tokens]];
    if (c.max_input_tokens) checks.push(["input", run.input, c.max_input_tokens]);
    if (c.max_output_tokens) checks.push(["output", run.output, c.max_output_tokens]);
    const [kind, used, budget] = checks.reduce((best, cur) => (cur[1] / cur[2] > best[1] / best[2] ? cur : best));
    const fraction = used / budget;
    if (fraction >= c.hard_stop_threshold) {
      run.stopReason = "token_capped";
      recordStopReason(context, "token_capped");
      return rewriteAiMessage(response, {
        toolCalls: [],
        append: `[TOKEN BUDGET EXCEEDED] The ${kind} token usage (${fmt(used)}) has exceeded the safety limit (${fmt(budget)}). Stop calling tools and give your final answer now with what you have.`,
        metadata: { stop_reason: "token_capped" },
      });
    }
    if (fraction >= c.warn_threshold && !run.warned) {
      run.warned = true;
      run.pending = `[TOKEN BUDGET WARNING] You have used ${fmt(used)} of your ${fmt(budget)} ${kind} token budget (${Math.round(fraction * 100)}%). Wrap up: prefer finishing over further exploration.`;
    }
    return response;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    if (!this.config.enabled) return handler(request) as never;
    const scope = resolveRunScope(request.runtime as RuntimeLike, request.state?.messages ?? request.messages);
    const run = this.runs.get(scope);
    let outgoing = request;
    if (run.pending) {
      outgoing = { ...request, messages: [...request.messages, new HumanMessage({ content: run.pending, name: "budget_warning", additional_kwargs: { hide_from_ui: true } })] };
      run.pending = null;
    }
    const response = await handler(outgoing);
    return (AIMessage.isInstance(response) ? this.account(response, scope, (request.runtime as RuntimeLike | undefined)?.context) : response) as never;
  }
}
