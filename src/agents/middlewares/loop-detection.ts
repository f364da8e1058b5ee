// Port of DeerFlow agents/middlewares/loop_detection_middleware.py (LoopDetectionMiddleware).
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { ModelRequest } from "langchain";
import { LoopDetectionConfigSchema, type LoopDetectionConfig } from "../../config/schema.js";
import { DeerflowMiddleware } from "./base.js";

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

/**
 * Stops tool-call loops within a run. Layer 1 counts identical tool-call sets in a sliding window: at
 * `warn_threshold` a "[LOOP DETECTED]" warning is queued (once per set), at `hard_limit` the run is stopped.
 * Layer 2 counts calls per tool name: at `tool_freq_warn` one warning per tool, at `tool_freq_hard_limit` a
 * "[FORCED STOP] Tool <name> called <n> times" stop (per-tool overrides in `tool_freq_overrides`). Warnings never
 * touch the AI message: they are appended to the next model request as a human message named `loop_warning`
 * (at most 4 per run). A hard stop replaces the last AI message by a copy without tool calls, the stop text
 * appended and finish reason `stop`, and sets `context.stop_reason = "loop_capped"` when the context is writable.
 * Hooks: afterModel (detect), wrapModelCall (inject). The agent is built per run, so the instance state is per run.
 */
export class LoopDetectionMiddleware extends DeerflowMiddleware {
  readonly name = "LoopDetectionMiddleware";
  /** Effective thresholds. */
  readonly config: LoopDetectionConfig;
  private window: string[] = [];
  private toolWindow: string[] = [];
  private warnedHashes = new Set<string>();
  private warnedTools = new Set<string>();
  private pending: string[] = [];
  private warningsSent = 0;

  /** @param config The `loop_detection` section; defaults 3/5/20/100/30/50. */
  constructor(config: Partial<LoopDetectionConfig> = {}) {
    super();
    this.config = LoopDetectionConfigSchema.parse(config);
  }

  private limitsFor(tool: string): [number, number] {
    return this.config.tool_freq_overrides[tool] ?? [this.config.tool_freq_warn, this.config.tool_freq_hard_limit];
  }

  afterModel(state: { messages: BaseMessage[] }, runtime?: { context?: unknown }) {
    const last = state.messages.at(-1);
    if (!last || !AIMessage.isInstance(last) || !last.tool_calls?.length) return undefined;
    const calls = last.tool_calls;
    const hash = toolCallSetHash(calls);
    this.window.push(hash);
    if (this.window.length > this.config.window_size) this.window.shift();
    const repeats = this.window.filter((h) => h === hash).length;

    const toolWindowSize = Math.max(this.config.tool_freq_hard_limit, ...Object.values(this.config.tool_freq_overrides).map(([, h]) => h));
    for (const c of calls) this.toolWindow.push(c.name);
    while (this.toolWindow.length > toolWindowSize) this.toolWindow.shift();

    if (repeats >= this.config.hard_limit) {
      return this.stop(last, `[FORCED STOP] The same tool calls were repeated ${repeats} times. Stop calling tools and answer with what you have.`, runtime);
    }
    for (const name of new Set(calls.map((c) => c.name))) {
      const count = this.toolWindow.filter((n) => n === name).length;
      const [warn, hard] = this.limitsFor(name);
      if (count >= hard) return this.stop(last, `[FORCED STOP] Tool ${name} called ${count} times. Stop calling it and answer with what you have.`, runtime);
      if (count >= warn && !this.warnedTools.has(name)) {
        this.warnedTools.add(name);
        this.pending.push(`[LOOP DETECTED] Tool ${name} has been called ${count} times in this run. Consider whether more calls help.`);
      } else if (count < warn) this.warnedTools.delete(name);
    }
    if (repeats >= this.config.warn_threshold && !this.warnedHashes.has(hash)) {
      this.warnedHashes.add(hash);
      this.pending.push(`[LOOP DETECTED] You have made the same tool call ${repeats} times. Change approach or answer with what you have.`);
    }
    for (const h of this.warnedHashes) if (!this.window.includes(h)) this.warnedHashes.delete(h);
    return undefined;
  }

  private stop(last: AIMessage, text: string, runtime?: { context?: unknown }) {
    const content = typeof last.content === "string" ? (last.content ? `${last.content}\n\n${text}` : text) : [...last.content, { type: "text", text }];
    const { tool_calls: _raw, function_call: _fn, ...kwargs } = last.additional_kwargs ?? {};
    const ctx = runtime?.context as Record<string, unknown> | undefined;
    if (ctx && typeof ctx === "object" && !Object.isFrozen(ctx)) ctx.stop_reason = "loop_capped";
    return {
      messages: [
        new AIMessage({
          id: last.id,
          content: content as string,
          name: last.name,
          tool_calls: [],
          additional_kwargs: kwargs,
          response_metadata: { ...last.response_metadata, finish_reason: "stop", loop_capped: true },
          usage_metadata: last.usage_metadata,
        }),
      ],
    };
  }

  wrapModelCall(request: ModelRequest, handler: (r: ModelRequest) => unknown) {
    if (!this.pending.length || this.warningsSent >= MAX_WARNINGS_PER_RUN) return handler(request) as never;
    const text = [...new Set(this.pending)].join("\n");
    this.pending = [];
    this.warningsSent++;
    return handler({ ...request, messages: [...request.messages, new HumanMessage({ content: text, name: "loop_warning" })] }) as never;
  }
}
