// The provider retry hook: langchain's own retry policy, plus a log line and a metric per retried attempt.
import { AsyncCaller } from "@langchain/core/utils/async_caller";
import { getLogger } from "../logger.js";
import { currentRunScope } from "../observability/run-scope.js";
import { classifyProviderError } from "./provider-errors.js";

/** langchain's default policy (no retry on 4xx but 429, aborts, quota exhaustion...), taken from a fresh caller. */
const defaultPolicy = (new AsyncCaller({}) as unknown as { onFailedAttempt?: (error: unknown) => void }).onFailedAttempt;

/**
 * An `onFailedAttempt` for a chat model named `modelName` (its config entry's name). It applies langchain's default
 * policy first (which throws to stop retrying), then logs the failed attempt at warn level on the run's logger
 * (`run_id`, `thread_id`, `request_id`, from the run scope) and counts it in `deerflow_provider_retries_total`.
 * The model's `max_retries` bounds the attempts: the last failed attempt of a call that used them all is logged
 * the same way, then the call fails.
 */
export function createRetryHandler(modelName: string): (error: unknown) => void {
  return (error: unknown) => {
    defaultPolicy?.(error);
    const scope = currentRunScope();
    const { failure, status } = classifyProviderError(error);
    const message = error instanceof Error ? error.message : String(error);
    (scope?.log ?? getLogger()).warn({ model: modelName, reason: failure, status, err: message }, `model '${modelName}' call failed (${failure}); retrying unless max_retries is spent`);
    scope?.metrics?.providerRetries.inc({ model: modelName, reason: failure });
  };
}
