// Port of DeerFlow guardrails/middleware.py (GuardrailMiddleware): every tool call is checked by a provider before
// it runs; a denied call never runs and the model gets the reason as the tool's result, so the agent can adapt.
import { ToolMessage } from "@langchain/core/messages";
import type { ToolCallHandler } from "langchain";
import { getLogger } from "../../logger.js";
import { currentRunScope } from "../../observability/run-scope.js";
import { runContextOf, SUBAGENT_CONTEXT_KEY, type RuntimeLike } from "../run-context.js";
import { DeerflowMiddleware } from "./base.js";
import type { GuardrailDecision, GuardrailProvider, GuardrailRequest } from "./guardrail-provider.js";
import { DEFAULT_GUARD_TIMEOUT_MS } from "./guardrails-options.js";
import { isControlFlowError } from "./tool-error-handling.js";
import { recordMiddlewareEvent } from "../run-journal-sink.js";

type ToolCallRequest = Parameters<ToolCallHandler>[0];

export { AllowlistProvider, isGuardrailProvider } from "./guardrail-provider.js";
export type { GuardrailDecision, GuardrailProvider, GuardrailReason, GuardrailRequest } from "./guardrail-provider.js";

/** Options of {@link GuardrailMiddleware}. */
export interface GuardrailMiddlewareOptions {
  /** Deny when the provider throws or times out (default true, upstream's default); false lets the call run. */
  failClosed?: boolean;
  /** OAP passport / hosted agent id handed to the provider as `agent_id`. */
  passport?: string | null;
  /** Longest wait for a decision, in ms (default 5000). */
  timeoutMs?: number;
  /** The `guard` label of the decision counter and log lines: `guardrails` (default) or `authorization`. */
  guard?: string;
}

/** Longest reason text shown to the model (upstream caps journal reasons at 500). */
const REASON_LIMIT = 500;

class GuardTimeout extends Error {}

/** The provider's decision, or a rejection when it throws, answers something that is not a decision, or is late. */
async function decide(provider: GuardrailProvider, request: GuardrailRequest, timeoutMs: number): Promise<GuardrailDecision> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new GuardTimeout(`no decision within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const pending = Promise.resolve().then(() => (provider.aevaluate ? provider.aevaluate(request) : provider.evaluate!(request)));
    const decision = await Promise.race([pending, late]);
    if (typeof decision !== "object" || decision === null || typeof decision.allow !== "boolean") throw new TypeError("the provider answered something that is not a decision ({allow: boolean})");
    return decision;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks every tool call with a {@link GuardrailProvider} before it runs (hook: wrapToolCall). A denial returns an
 * error ToolMessage instead of running the tool: `Guardrail denied: tool '<name>' was blocked (<code>). Reason:
 * <message>. Choose an alternative approach.` (upstream's text). A provider that throws, answers no decision or takes
 * longer than `timeoutMs` denies (`oap.evaluator_error`) unless `failClosed` is false. Graph interrupts pass through.
 * Each decision is logged with the run id (denials at warn, allows at debug) and counted in
 * `deerflow_guard_decisions_total{guard, decision}` when the run has metrics. Placed after DanglingToolCall and
 * before ToolErrorHandling (upstream's runtime chain), so a tool's own error is still turned into a result inside it.
 */
export class GuardrailMiddleware extends DeerflowMiddleware {
  /** `GuardrailMiddleware`, or `AuthorizationGuardMiddleware` for the authorization guard (names are unique in a chain). */
  readonly name: string;
  private readonly failClosed: boolean;
  private readonly passport: string | null;
  private readonly timeoutMs: number;
  private readonly guard: string;

  constructor(
    readonly provider: GuardrailProvider,
    options: GuardrailMiddlewareOptions = {},
  ) {
    super();
    this.failClosed = options.failClosed ?? true;
    this.passport = options.passport ?? null;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_GUARD_TIMEOUT_MS;
    this.guard = options.guard ?? "guardrails";
    this.name = this.guard === "guardrails" ? "GuardrailMiddleware" : `${this.guard[0].toUpperCase()}${this.guard.slice(1)}GuardMiddleware`;
  }

  /** What the provider is asked about `request` (the run's identity from its context). */
  buildRequest(request: ToolCallRequest): GuardrailRequest {
    const run = runContextOf(request.runtime as RuntimeLike | undefined);
    const args = request.toolCall.args;
    return {
      tool_name: String(request.toolCall.name ?? ""),
      tool_input: typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {},
      agent_id: this.passport,
      thread_id: run.threadId ?? null,
      run_id: run.runId ?? null,
      tool_call_id: request.toolCall.id ?? null,
      is_subagent: run.raw[SUBAGENT_CONTEXT_KEY] !== undefined,
      timestamp: new Date().toISOString(),
      user_id: run.userId,
      user_role: run.userRole ?? null,
      is_internal: run.raw.is_internal === true,
    };
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const asked = this.buildRequest(request);
    const scope = currentRunScope();
    const log = scope?.log ?? getLogger();
    const where = { guard: this.guard, tool: asked.tool_name, run_id: asked.run_id, thread_id: asked.thread_id };
    let decision: GuardrailDecision;
    try {
      decision = await decide(this.provider, asked, this.timeoutMs);
    } catch (err) {
      if (isControlFlowError(err, request.runtime?.signal)) throw err;
      const why = err instanceof GuardTimeout ? err.message : `${(err as Error)?.name ?? "Error"}: ${(err as Error)?.message ?? String(err)}`;
      scope?.metrics?.guardDecisions.inc({ guard: this.guard, decision: "error" });
      const failed: GuardrailDecision = { allow: false, reasons: [{ code: "oap.evaluator_error", message: `${this.guard} provider error (fail-closed)` }] };
      if (!this.failClosed) {
        log.warn({ ...where, err: why }, `${this.guard} provider failed (${why}); fail_closed is false, so tool '${asked.tool_name}' runs`);
        this.audit(request, asked, failed, "allow_tool_call_after_provider_error", true);
        return handler(request);
      }
      log.warn({ ...where, err: why }, `${this.guard} provider failed (${why}); tool '${asked.tool_name}' denied (fail-closed)`);
      this.audit(request, asked, failed, "deny_tool_call", true);
      return this.denied(asked, failed);
    }
    scope?.metrics?.guardDecisions.inc({ guard: this.guard, decision: decision.allow ? "allow" : "deny" });
    if (decision.allow) {
      log.debug({ ...where, policy: decision.policy_id ?? null }, `${this.guard} allowed tool '${asked.tool_name}'`);
      return handler(request);
    }
    log.warn({ ...where, policy: decision.policy_id ?? null, code: decision.reasons?.[0]?.code ?? "oap.denied" }, `${this.guard} denied tool '${asked.tool_name}'`);
    this.audit(request, asked, decision, "deny_tool_call", false);
    return this.denied(asked, decision);
  }

  /**
   * Records a security-relevant decision (a denial, or a call let through after a provider error) as
   * `middleware:guardrail` in the run's journal, with upstream's fields; plain allows are not recorded (upstream).
   */
  private audit(request: ToolCallRequest, asked: GuardrailRequest, decision: GuardrailDecision, action: string, providerError: boolean): void {
    const reasons = decision.reasons ?? [];
    recordMiddlewareEvent(request.runtime, "guardrail", {
      name: this.name,
      hook: "wrap_tool_call",
      action,
      changes: {
        tool_name: asked.tool_name,
        tool_call_id: asked.tool_call_id,
        agent_id: asked.agent_id,
        is_subagent: asked.is_subagent,
        user_role: asked.user_role,
        allow: decision.allow,
        policy_id: decision.policy_id ?? null,
        reason_codes: reasons.map((r) => r.code).filter(Boolean),
        reason_messages: reasons.map((r) => String(r.message ?? "").slice(0, REASON_LIMIT)).filter(Boolean),
        fail_closed: this.failClosed,
        provider_error: providerError,
      },
    });
  }

  /** The tool result a denied call gets (upstream `_build_denied_message`). */
  private denied(asked: GuardrailRequest, decision: GuardrailDecision): ToolMessage {
    const first = decision.reasons?.[0];
    const reason = String(first?.message || "blocked by guardrail policy").slice(0, REASON_LIMIT);
    const code = first?.code || "oap.denied";
    const name = asked.tool_name || "unknown_tool";
    return new ToolMessage({
      content: `Guardrail denied: tool '${name}' was blocked (${code}). Reason: ${reason}. Choose an alternative approach.`,
      tool_call_id: asked.tool_call_id || "missing_id",
      name,
      status: "error",
    });
  }
}
