// The run a piece of async work belongs to, carried by AsyncLocalStorage. Code deep inside a model call (the
// provider retry handler, the fallback middleware) has no run config at hand; the scope gives it the run's logger
// and counters without threading arguments through langchain.
import type { Logger } from "pino";
import { ContextSlot } from "../context-slot.js";
import type { GatewayMetrics } from "./metrics.js";

/** What the worker knows about the run it executes. */
export interface RunScope {
  runId: string;
  threadId: string;
  /** The id of the HTTP request that created the run (see request-id.ts). */
  requestId?: string;
  /** The run's logger (`run_id`, `thread_id`, `request_id` bound). */
  log: Logger;
  /** Model tokens streamed so far in this run (incremented by the run's callback handler). */
  tokensStreamed: number;
  /** Model switches made by ModelFallbackMiddleware, in order (also written to the run's metadata). */
  fallbacks: ModelFallbackRecord[];
  /** The app's metrics (provider retries and fallbacks are counted from inside the model call). */
  metrics?: GatewayMetrics;
}

/** One switch from a failing model to the next in its `fallbacks` chain. */
export interface ModelFallbackRecord {
  from: string;
  to: string;
  /** `connection`, `timeout`, `rate_limited` or `server_error` (see model-fallback.ts). */
  reason: string;
  /** The failing call's HTTP status, when there was one. */
  status?: number;
}

const scopeSlot = new ContextSlot<RunScope>("deerflow.runScope");

/** Runs `fn` with `scope` as the current run scope (for everything it awaits, callbacks included). */
export function withRunScope<T>(scope: RunScope, fn: () => T): T {
  return scopeSlot.run(scope, fn);
}

/** The scope of the run this code runs for, or undefined outside a gateway run (SDK embeds, tests of parts). */
export function currentRunScope(): RunScope | undefined {
  return scopeSlot.get();
}
