// Port of DeerFlow agents/middlewares/tool_progress_middleware.py (ToolProgressMiddleware, RFC #3177).
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import type { ModelRequest, ToolCallHandler } from "langchain";
import { getLogger } from "../../logger.js";
import { DeerflowMiddleware } from "./base.js";
import { toolCallKey } from "./loop-detection.js";
import { resolveRunScope, RunScopedStore, type RuntimeLike } from "./run-scope.js";
import { ToolProgressConfigSchema, type ToolProgressConfig } from "./tool-progress-options.js";
import { TOOL_META_KEY, toolResultMeta, type ToolResultMeta } from "./tool-result-signal.js";
import { toolMessageOf } from "./tool-result-meta.js";
import { parseOnce } from "../parse-once.js";

export { ToolProgressConfigSchema, type ToolProgressConfig };

type ToolCallRequest = Parameters<ToolCallHandler>[0];
const MAX_PENDING_PER_RUN = 3;
const MAX_CONTENT_FOR_WORDSET = 8192;

/** Per tool of one run: upstream's ToolPhaseState, plus the call keys of the current problem streak. */
interface ToolPhase {
  phase: "active" | "warned" | "blocked";
  problems: number;
  blockReason: string | null;
  recent: Set<string>[];
  streakKeys: Set<string>;
}
interface ProgressRun {
  tools: Map<string, ToolPhase>;
  pending: string[];
}

/** Lower-case words of 3+ characters of the first 8192 characters (upstream's Jaccard word set). */
export function wordSet(content: string): Set<string> {
  return new Set(content.slice(0, MAX_CONTENT_FOR_WORDSET).toLowerCase().match(/[\p{L}\p{N}_]{3,}/gu) ?? []);
}

/** True when `current` is at least `threshold` Jaccard-similar to one of the last 3 sets (both with >= `minWords`). */
export function isNearDuplicate(current: Set<string>, recent: readonly Set<string>[], threshold: number, minWords: number): boolean {
  if (current.size < minWords) return false;
  for (const prev of recent.slice(-3)) {
    if (prev.size < minWords) continue;
    let common = 0;
    for (const w of current) if (prev.has(w)) common++;
    const union = current.size + prev.size - common;
    if (union > 0 && common / union >= threshold) return true;
  }
  return false;
}

const HINT_BASE: Record<string, string> = {
  no_results: "[PROGRESS HINT] Your search returned no results.",
  not_found: "[PROGRESS HINT] The resource was not found repeatedly.",
  rate_limited: "[PROGRESS HINT] The tool is being rate-limited.",
  transient: "[PROGRESS HINT] The tool encountered repeated transient failures.",
  partial_success: "[PROGRESS HINT] The tool has returned incomplete results multiple times.",
  success: "[PROGRESS HINT] The tool is returning duplicate results.",
};
const HINT_ACTION: Record<string, string> = {
  rewrite_query: "Try rephrasing your search query with different keywords or approach.",
  try_alternative: "Consider using a different tool or strategy.",
  summarize: "Consider summarizing your current findings and moving forward.",
  stop: "Do not retry this operation — it is not recoverable.",
  continue: "Try rephrasing your query or using a different search term.",
};
const BLOCK_REASON: Record<string, string> = {
  no_results: "Repeated no-results — rewrite your query or try a different tool.",
  not_found: "Repeated not-found — rewrite your query or try a different resource.",
  rate_limited: "Repeated rate-limiting — summarize current findings and proceed.",
  transient: "Repeated transient failures — try a different approach.",
  auth: "Authentication failure — this tool cannot be used.",
  config: "Tool is not configured — this tool cannot be used.",
  internal: "Repeated internal errors — this tool is unavailable.",
};

/** Upstream's hint text for a problem result. */
export function formatHint(meta: ToolResultMeta): string {
  const base = HINT_BASE[meta.error_type ?? meta.status] ?? "[PROGRESS HINT] The tool is not producing new information.";
  return `${base} ${HINT_ACTION[meta.recommended_next_action] ?? ""}`.trim();
}

/** Upstream's reason given when a tool is blocked. */
export function blockReason(meta: ToolResultMeta): string {
  return BLOCK_REASON[meta.error_type ?? ""] ?? "Tool has not produced new information after multiple attempts — summarize and move on.";
}

/** Options beyond the `tool_progress` section. */
export interface ToolProgressOptions {
  /**
   * `loop_detection.warn_threshold` when LoopDetectionMiddleware is in the chain, else null. A problem streak made
   * of one identical call repeated at least that often is LoopDetection's "[LOOP DETECTED]" warning already, so
   * this middleware counts it (and can still block) but does not add its own hint for it.
   */
  loopWarnThreshold?: number | null;
}

/**
 * A result-quality guard per tool and run: each result of a non-exempt tool is classified (error type, partial
 * success, or a success near-identical by word-set Jaccard to one of the tool's last 3 results); problem results
 * in a row move the tool to WARNED at `stagnation_threshold` (a "[PROGRESS HINT] ..." human message named
 * `progress_hint` is added to the next model request, at most 3 queued per run). A tool whose problems the model
 * cannot fix (transient, rate-limited) is BLOCKED `warn_escalation_count` problems later; auth / config / internal
 * failures block at once. A blocked tool does not run: its call gets "[TOOL_BLOCKED] <reason>" (status error).
 * A good result resets the tool to ACTIVE. State is per run (upstream resets it at each run's start).
 *
 * Versus LoopDetectionMiddleware: that one watches the calls the model makes (same call set, same tool too often)
 * and stops the whole turn; this one watches what comes back and blocks one tool. An exact repeat that both would
 * flag is left to LoopDetection's warning ({@link ToolProgressOptions.loopWarnThreshold}).
 * Hooks: wrapToolCall (outer of ToolErrorHandlingMiddleware, so tool exceptions arrive as error results) and
 * wrapModelCall (hint injection).
 */
export class ToolProgressMiddleware extends DeerflowMiddleware {
  readonly name = "ToolProgressMiddleware";
  /** Effective options. */
  readonly config: ToolProgressConfig;
  private readonly exempt: ReadonlySet<string>;
  private readonly runs: RunScopedStore<ProgressRun>;

  /** @param config The `tool_progress` section (upstream defaults). @throws ZodError for out-of-range values. */
  constructor(config: Partial<ToolProgressConfig> = {}, private readonly options: ToolProgressOptions = {}) {
    super();
    this.config = parseOnce(ToolProgressConfigSchema, config);
    this.exempt = new Set(this.config.exempt_tools);
    this.runs = new RunScopedStore(() => ({ tools: new Map(), pending: [] }), this.config.max_tracked_threads);
  }

  async wrapToolCall(request: ToolCallRequest, handler: ToolCallHandler) {
    const tool = request.toolCall.name;
    if (!tool || this.exempt.has(tool)) return handler(request);
    const scope = resolveRunScope(request.runtime as RuntimeLike | undefined, request.state?.messages);
    const run = this.runs.get(scope);
    const state = run.tools.get(tool);
    if (state?.phase === "blocked") {
      getLogger().info({ thread_id: scope.threadId, tool }, "tool_progress: blocked call intercepted");
      return blockedMessage(request, tool, state.blockReason ?? "");
    }
    const result = await handler(request);
    const message = toolMessageOf(result);
    if (message) this.assess(run, tool, toolCallKey({ name: tool, args: request.toolCall.args }), message, scope.threadId);
    return result;
  }

  /** Updates the tool's phase from one result and queues a hint when it warrants one. */
  private assess(run: ProgressRun, tool: string, key: string, message: ToolMessage, threadId: string): void {
    const state = run.tools.get(tool) ?? { phase: "active", problems: 0, blockReason: null, recent: [], streakKeys: new Set<string>() };
    run.tools.set(tool, state);
    const meta = toolResultMeta(message);
    const before = state.phase;
    const hint = this.transition(state, meta, typeof message.content === "string" ? message.content : "", key);
    if (state.phase !== before) getLogger().info({ thread_id: threadId, tool, phase: state.phase, problems: state.problems, reason: state.blockReason ?? undefined }, `tool_progress: ${tool} -> ${state.phase.toUpperCase()}`);
    if (!hint || !this.config.inject_assessment) return;
    const loopWarn = this.options.loopWarnThreshold;
    if (loopWarn != null && state.streakKeys.size === 1 && state.problems >= loopWarn) return;
    if (run.pending.length < MAX_PENDING_PER_RUN) run.pending.push(hint);
  }

  /** Upstream's state machine (_assess_and_transition), in place; returns the hint to queue, if any. */
  private transition(state: ToolPhase, meta: ToolResultMeta, content: string, key: string): string | null {
    const count = state.problems + 1;
    if (!meta.recoverable_by_model && meta.recommended_next_action === "stop") {
      Object.assign(state, { phase: "blocked", problems: count, blockReason: blockReason(meta) });
      return null;
    }
    const words = meta.status === "success" ? wordSet(content) : new Set<string>();
    const problem = meta.status !== "success" || isNearDuplicate(words, state.recent, this.config.jaccard_similarity_threshold, this.config.min_word_count_for_similarity);
    if (!problem) {
      state.recent = [...state.recent, words].slice(-3);
      Object.assign(state, { phase: "active", problems: 0, streakKeys: new Set() });
      return null;
    }
    state.problems = count;
    state.streakKeys.add(key);
    if (count >= this.config.stagnation_threshold + this.config.warn_escalation_count && !meta.recoverable_by_model) {
      Object.assign(state, { phase: "blocked", blockReason: blockReason(meta) });
      return null;
    }
    if (count >= this.config.stagnation_threshold) {
      state.phase = "warned";
      return formatHint(meta);
    }
    return null;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const scope = resolveRunScope(request.runtime as RuntimeLike | undefined, request.state?.messages ?? request.messages);
    const run = this.runs.peek(scope);
    if (!run?.pending.length) return handler(request) as never;
    const hints = [...new Set(run.pending)];
    run.pending = [];
    const hint = new HumanMessage({ content: hints.join("\n\n"), name: "progress_hint" });
    return handler({ ...request, messages: [...request.messages, hint] }) as never;
  }
}

/** Upstream's result for a call to a blocked tool (the tool does not run). */
function blockedMessage(request: ToolCallRequest, tool: string, reason: string): ToolMessage {
  return new ToolMessage({
    content: `[TOOL_BLOCKED] ${reason}`,
    tool_call_id: request.toolCall.id ?? "",
    name: tool,
    status: "error",
    additional_kwargs: {
      [TOOL_META_KEY]: { status: "error", error_type: "blocked_by_progress_guard", recoverable_by_model: true, recommended_next_action: "summarize", source: "progress_middleware" },
    },
  });
}
