// Port of DeerFlow agents/middlewares/loop_detection_middleware.py (LoopDetectionMiddleware).
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { DeerflowMiddleware } from "./base.js";
import { recordStopReason, rewriteAiMessage } from "./message-utils.js";
import { resolveRunScope, RunScopedStore, type RunScope, type RuntimeLike } from "./run-scope.js";
import { LoopDetectionConfigSchema, type LoopDetectionConfig } from "./loop-detection-options.js";
import { parseOnce } from "../parse-once.js";
import { recordMiddlewareEvent } from "../run-journal-sink.js";

export { LoopDetectionConfigSchema, type LoopDetectionConfig };

const SALIENT_FIELDS = ["path", "url", "query", "command", "pattern", "glob", "cmd"];
const MAX_WARNINGS_PER_RUN = 4;

interface ToolCallLike {
  name: string;
  args?: unknown;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The identity of one tool call for loop detection: `read_file` by path and 200-line bucket of the requested
 * range, `write_file` / `str_replace` by all arguments, others by their salient fields (path, url, query,
 * command, pattern, glob, cmd) or all arguments. JSON-string arguments are parsed first.
 */
export function toolCallKey(call: ToolCallLike): string {
  let args: unknown = call.args;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      /* keep the raw string */
    }
  }
  const a = (args && typeof args === "object" ? args : { value: args }) as Record<string, unknown>;
  if (call.name === "read_file") {
    const start = Number(a.start_line ?? a.offset ?? 0) || 0;
    const end = Number(a.end_line ?? a.limit ?? 0) || 0;
    return `read_file:${String(a.path ?? "")}:${Math.floor(start / 200)}:${Math.floor(end / 200)}`;
  }
  if (call.name === "write_file" || call.name === "str_replace") return `${call.name}:${stableJson(a)}`;
  const salient = SALIENT_FIELDS.filter((f) => f in a);
  return `${call.name}:${salient.length ? stableJson(Object.fromEntries(salient.map((f) => [f, a[f]]))) : stableJson(a)}`;
}

/** Order-independent hash of one AI message's tool-call set. */
export function toolCallSetHash(calls: ToolCallLike[]): string {
  return calls.map(toolCallKey).sort().join("|");
}

/** What LoopDetectionMiddleware tracks for one run of one thread. */
interface LoopRunState {
  window: string[];
  toolWindow: string[];
  warnedHashes: Set<string>;
  warnedTools: Set<string>;
  pending: string[];
  warningsSent: number;
  stopReason: string | null;
}

const newRunState = (): LoopRunState => ({
  window: [], toolWindow: [], warnedHashes: new Set(), warnedTools: new Set(), pending: [], warningsSent: 0, stopReason: null,
});

/**
 * Stops tool-call loops within a run. Layer 1 counts identical tool-call sets in a sliding window: at
 * `warn_threshold` a "[LOOP DETECTED]" warning is queued (once per set), at `hard_limit` the run is stopped.
 * Layer 2 counts calls per tool name: at `tool_freq_warn` one warning per tool, at `tool_freq_hard_limit` a
 * "[FORCED STOP] Tool <name> called <n> times" stop (per-tool overrides in `tool_freq_overrides`). Warnings never
 * touch the AI message: they are appended to the next model request as a human message named `loop_warning`
 * (at most 4 per run). A hard stop replaces the model's message by a copy with the same id, no tool calls, the
 * stop text appended and finish reason `stop`; the run's stop reason becomes `loop_capped`
 * ({@link consumeStopReason}, and `context.stop_reason` when the context is writable).
 *
 * Hook: wrapModelCall only (inject before the call, detect on the response), so it adds no graph node. State is
 * kept per thread (`thread_id`) and per run (`run_id`, else the run's input message), LRU-bounded by
 * `max_tracked_threads`: one instance can serve many threads and runs without leaking warnings between them.
 * Mirrors DeerFlow `LoopDetectionMiddleware` (which uses before/after_model and before/after_agent).
 */
export class LoopDetectionMiddleware extends DeerflowMiddleware {
  readonly name = "LoopDetectionMiddleware";
  /** Effective thresholds. */
  readonly config: LoopDetectionConfig;
  private readonly runs: RunScopedStore<LoopRunState>;

  /** @param config The `loop_detection` section; defaults 3/5/20/100/30/50. @throws ZodError when hard < warn. */
  constructor(config: Partial<LoopDetectionConfig> = {}) {
    super();
    this.config = parseOnce(LoopDetectionConfigSchema, config);
    this.runs = new RunScopedStore(newRunState, this.config.max_tracked_threads);
  }

  private limitsFor(tool: string): [number, number] {
    return this.config.tool_freq_overrides[tool] ?? [this.config.tool_freq_warn, this.config.tool_freq_hard_limit];
  }

  /**
   * Records one model response of the run `scope` and returns the replacement message on a hard stop (else
   * undefined; warnings are queued for the next request).
   */
  detect(message: AIMessage, scope: RunScope, context?: unknown): AIMessage | undefined {
    const calls = message.tool_calls ?? [];
    if (!calls.length) return undefined;
    const run = this.runs.get(scope);
    const hash = toolCallSetHash(calls);
    run.window.push(hash);
    if (run.window.length > this.config.window_size) run.window.shift();
    const repeats = run.window.filter((h) => h === hash).length;

    const toolWindowSize = Math.max(this.config.tool_freq_hard_limit, ...Object.values(this.config.tool_freq_overrides).map(([, h]) => h));
    for (const c of calls) run.toolWindow.push(c.name);
    while (run.toolWindow.length > toolWindowSize) run.toolWindow.shift();

    if (repeats >= this.config.hard_limit) {
      return this.stop(run, message, `[FORCED STOP] The same tool calls were repeated ${repeats} times. Stop calling tools and answer with what you have.`, context);
    }
    for (const name of new Set(calls.map((c) => c.name))) {
      const count = run.toolWindow.filter((n) => n === name).length;
      const [warn, hard] = this.limitsFor(name);
      if (count >= hard) return this.stop(run, message, `[FORCED STOP] Tool ${name} called ${count} times. Stop calling it and answer with what you have.`, context);
      if (count >= warn && !run.warnedTools.has(name)) {
        run.warnedTools.add(name);
        run.pending.push(`[LOOP DETECTED] Tool ${name} has been called ${count} times in this run. Consider whether more calls help.`);
      } else if (count < warn) run.warnedTools.delete(name);
    }
    if (repeats >= this.config.warn_threshold && !run.warnedHashes.has(hash)) {
      run.warnedHashes.add(hash);
      run.pending.push(`[LOOP DETECTED] You have made the same tool call ${repeats} times. Change approach or answer with what you have.`);
    }
    for (const h of run.warnedHashes) if (!run.window.includes(h)) run.warnedHashes.delete(h);
    return undefined;
  }

  private stop(run: LoopRunState, last: AIMessage, text: string, context: unknown): AIMessage {
    run.stopReason = "loop_capped";
    recordStopReason(context, "loop_capped");
    const suppressed = (last.tool_calls ?? []).map((c) => c.name);
    recordMiddlewareEvent({ context }, "loop_detection", { name: "LoopDetectionMiddleware", hook: "wrap_model_call", action: "force_stop", changes: { stop_reason: "loop_capped", message: text, suppressed_tool_call_names: suppressed } });
    return rewriteAiMessage(last, { append: text, toolCalls: [], metadata: { finish_reason: "stop", loop_capped: true } });
  }

  /** Warnings queued for the next model request of the run `scope` (read-only view). */
  pendingWarnings(scope: RunScope): readonly string[] {
    return this.runs.peek(scope)?.pending ?? [];
  }

  /** `"loop_capped"` once after a hard stop in the run `scope`, then null (DeerFlow `consume_stop_reason`). */
  consumeStopReason(scope: RunScope): string | null {
    const run = this.runs.peek(scope);
    const reason = run?.stopReason ?? null;
    if (run) run.stopReason = null;
    return reason;
  }

  async wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    const runtime = request.runtime as RuntimeLike | undefined;
    const scope = resolveRunScope(runtime, request.state?.messages ?? request.messages);
    const run = this.runs.get(scope);
    let outgoing = request;
    if (run.pending.length) {
      if (run.warningsSent < MAX_WARNINGS_PER_RUN) {
        run.warningsSent++;
        const warning = new HumanMessage({ content: [...new Set(run.pending)].join("\n"), name: "loop_warning" });
        recordMiddlewareEvent(runtime, "loop_detection", { name: "LoopDetectionMiddleware", hook: "wrap_model_call", action: "inject_warning", changes: { warnings: [...new Set(run.pending)] } });
        outgoing = { ...request, messages: [...request.messages, warning] };
      }
      run.pending = [];
    }
    const response = await handler(outgoing);
    if (!AIMessage.isInstance(response)) return response as never;
    return (this.detect(response, scope, runtime?.context) ?? response) as never;
  }
}
