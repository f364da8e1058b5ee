// Prometheus metrics of the gateway (prom-client). The registry lives on the object this factory returns, never
// in a module singleton, so every app (and every test) has its own counts.
//
// Cluster mode (WORKERS=N): each worker keeps its own GatewayMetrics; the primary answers /metrics with
// prom-client's AggregatorRegistry.clusterMetrics(), after each worker called
// AggregatorRegistry.setRegistries([metrics.registry]). Counters and histograms sum across workers; the gauges
// below declare `aggregator: "sum"` (active runs, open streams) so totals stay right.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** Options of {@link createGatewayMetrics}. */
export interface GatewayMetricsOptions {
  /** Registry to register into (default: a new one). */
  registry?: Registry;
  /**
   * Also collect prom-client's process metrics (CPU, memory, GC, handles) and the event-loop delay
   * (`nodejs_eventloop_lag_*_seconds`, from perf_hooks.monitorEventLoopDelay). Default true.
   */
  defaultMetrics?: boolean;
  /** Labels added to every series (e.g. `{worker: "1"}`). */
  defaultLabels?: Record<string, string>;
}

/** Buckets for whole runs, in seconds (a run is seconds to minutes). */
const RUN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Buckets for the time to first token, in seconds. */
const TTFT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
/** Buckets for HTTP handling time, in seconds (SSE responses last as long as their run). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The gateway's metrics and the registry that exposes them. Names and labels are listed in docs/operations.md. */
export interface GatewayMetrics {
  registry: Registry;
  /** Under `WORKERS=N`: the whole service's metrics (cluster-metrics.ts); unset, `/metrics` answers `registry`'s. */
  service?: () => Promise<string>;
  /** Runs whose worker started executing, by `assistant_id`. */
  runsStarted: Counter<"assistant_id">;
  /** Runs that ended, by `assistant_id` and final `status` (`success`, `error`, `interrupted`). */
  runsFinished: Counter<"assistant_id" | "status">;
  /** Seconds from a run's start to its end, by `assistant_id` and `status`. */
  runDuration: Histogram<"assistant_id" | "status">;
  /** Seconds from a run's start to the first model token it streamed, by `assistant_id`. */
  timeToFirstToken: Histogram<"assistant_id">;
  /** Runs executing now. */
  activeRuns: Gauge;
  /** SSE responses open now (run streams and joins). */
  openStreams: Gauge;
  /** Model calls that completed, by configured model `model` name. */
  modelCalls: Counter<"model">;
  /** Tokens by `model` and `direction` (`input`, `output`), as reported by the provider. */
  modelTokens: Counter<"model" | "direction">;
  /** Failed model calls (after the provider's retries), by `model` and `reason`. */
  modelErrors: Counter<"model" | "reason">;
  /**
   * Failed provider attempts of a retryable kind, by `model` and `reason`: each is retried unless the call has spent
   * its `max_retries` (so a call that fails for good adds max_retries + 1).
   */
  providerRetries: Counter<"model" | "reason">;
  /** Switches to a fallback model, by `from`, `to` and `reason`. */
  modelFallbacks: Counter<"from" | "to" | "reason">;
  /** Config file reloads, by `result` (`success`, `failure`). */
  configReloads: Counter<"result">;
  /** HTTP responses by `method`, `route` (the route pattern, never the raw URL) and `status`. */
  httpRequests: Counter<"method" | "route" | "status">;
  /** HTTP handling time by `method` and `route`, in seconds. */
  httpDuration: Histogram<"method" | "route">;
  /** Requests refused by a limit, by `limit` (`rate`, `concurrent_runs`, `token_quota`). */
  limitRejections: Counter<"limit">;
  /**
   * Sandbox commands (bubblewrap provider) by `outcome` (`ok`, `error` = non-zero exit, `limit`, `refused`) and
   * `limit` (`timeout`, `cpu`, `memory`, `processes`, `file_size`, `disk`, `output`, a concurrency cap, or `none`).
   */
  sandboxCommands: Counter<"outcome" | "limit">;
  /** Seconds a sandbox command took, from the tool's call to its end. */
  sandboxCommandDuration: Histogram;
  /** Research tool calls (web_search, web_fetch, image_search, web_capture) by `tool` and `provider`, cache hits included. */
  webToolCalls: Counter<"tool" | "provider">;
  /** Research tool calls that answered an error, by `tool`, `provider` and `reason` (src/web/web-error.ts). */
  webToolFailures: Counter<"tool" | "provider" | "reason">;
  /** Seconds a research tool call took (cache misses), by `tool` and `provider`. */
  webToolDuration: Histogram<"tool" | "provider">;
  /** Research tool calls served from the cache, by `tool` and `provider`. */
  webToolCacheHits: Counter<"tool" | "provider">;
  /** Tool-call checks by `guard` (`guardrails`, `authorization`) and `decision` (`allow`, `deny`, `error`: a denial by fail-closed). */
  guardDecisions: Counter<"guard" | "decision">;
}

/**
 * Creates the gateway's metrics in `options.registry` (a new Registry by default). Metric names start with
 * `deerflow_`; durations are in seconds (Prometheus convention).
 * @throws Error from prom-client when a metric of the same name already exists in the given registry.
 */
export function createGatewayMetrics(options: GatewayMetricsOptions = {}): GatewayMetrics {
  const registry = options.registry ?? new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    runsStarted: new Counter({ name: "deerflow_runs_started_total", help: "Runs whose worker started executing", labelNames: ["assistant_id"], registers }),
    runsFinished: new Counter({ name: "deerflow_runs_finished_total", help: "Runs that ended, by final status", labelNames: ["assistant_id", "status"], registers }),
    runDuration: new Histogram({ name: "deerflow_run_duration_seconds", help: "Run duration from start to end", labelNames: ["assistant_id", "status"], buckets: RUN_BUCKETS, registers }),
    timeToFirstToken: new Histogram({ name: "deerflow_run_time_to_first_token_seconds", help: "Time from run start to its first streamed model token", labelNames: ["assistant_id"], buckets: TTFT_BUCKETS, registers }),
    activeRuns: new Gauge({ name: "deerflow_active_runs", help: "Runs executing now", registers, aggregator: "sum" }),
    openStreams: new Gauge({ name: "deerflow_sse_streams_open", help: "SSE responses open now", registers, aggregator: "sum" }),
    modelCalls: new Counter({ name: "deerflow_model_calls_total", help: "Model calls that completed", labelNames: ["model"], registers }),
    modelTokens: new Counter({ name: "deerflow_model_tokens_total", help: "Tokens reported by the provider", labelNames: ["model", "direction"], registers }),
    modelErrors: new Counter({ name: "deerflow_model_errors_total", help: "Model calls that failed after retries", labelNames: ["model", "reason"], registers }),
    providerRetries: new Counter({ name: "deerflow_provider_retries_total", help: "Failed provider attempts of a retryable kind (retried unless max_retries is spent)", labelNames: ["model", "reason"], registers }),
    modelFallbacks: new Counter({ name: "deerflow_model_fallbacks_total", help: "Switches to a fallback model", labelNames: ["from", "to", "reason"], registers }),
    configReloads: new Counter({ name: "deerflow_config_reloads_total", help: "Config file reloads", labelNames: ["result"], registers }),
    httpRequests: new Counter({ name: "deerflow_http_requests_total", help: "HTTP responses by route pattern and status", labelNames: ["method", "route", "status"], registers }),
    httpDuration: new Histogram({ name: "deerflow_http_request_duration_seconds", help: "HTTP handling time by route pattern", labelNames: ["method", "route"], buckets: HTTP_BUCKETS, registers }),
    webToolCalls: new Counter({ name: "deerflow_web_tool_calls_total", help: "Research tool calls by tool and provider", labelNames: ["tool", "provider"], registers }),
    webToolFailures: new Counter({ name: "deerflow_web_tool_failures_total", help: "Research tool calls that answered an error, by reason", labelNames: ["tool", "provider", "reason"], registers }),
    webToolDuration: new Histogram({ name: "deerflow_web_tool_duration_seconds", help: "Research tool call time (cache misses)", labelNames: ["tool", "provider"], buckets: HTTP_BUCKETS, registers }),
    webToolCacheHits: new Counter({ name: "deerflow_web_tool_cache_hits_total", help: "Research tool calls served from the cache", labelNames: ["tool", "provider"], registers }),
    limitRejections: new Counter({ name: "deerflow_limit_rejections_total", help: "Requests refused by a rate limit, run cap or token quota", labelNames: ["limit"], registers }),
    sandboxCommands: new Counter({ name: "deerflow_sandbox_commands_total", help: "Sandbox commands by outcome and the limit that ended them", labelNames: ["outcome", "limit"], registers }),
    sandboxCommandDuration: new Histogram({ name: "deerflow_sandbox_command_duration_seconds", help: "Sandbox command duration", buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600], registers }),
    guardDecisions: new Counter({ name: "deerflow_guard_decisions_total", help: "Tool-call checks by guardrail or authorization, by decision", labelNames: ["guard", "decision"], registers }),
  };
}
