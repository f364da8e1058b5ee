// The `llm_call` and `circuit_breaker` option schemas of LLMErrorHandlingMiddleware, in a zod-only leaf module the
// app config composes (DeerFlow config/app_config.py LlmCallConfig and CircuitBreakerConfig, same keys and defaults).
import { z } from "zod";

/** `circuit_breaker`: consecutive transient failures of one provider that open its circuit, and for how long (s). */
export const CircuitBreakerConfigSchema = z.looseObject({
  failure_threshold: z.number().int().min(1).default(5),
  recovery_timeout_sec: z.number().int().min(0).default(60),
});
/** A validated `circuit_breaker` section. */
export type CircuitBreakerConfig = z.infer<typeof CircuitBreakerConfigSchema>;

/**
 * `llm_call`: the retry loop and the process-wide cap on model calls in flight. `max_concurrent_calls` 0 = no cap;
 * it is read once, at the first model call of the process (upstream freezes it the same way). Delays are ms.
 */
export const LlmCallConfigSchema = z.looseObject({
  max_concurrent_calls: z.number().int().min(0).default(0),
  retry_max_attempts: z.number().int().min(1).default(3),
  retry_base_delay_ms: z.number().int().min(0).default(1000),
  retry_cap_delay_ms: z.number().int().min(0).default(8000),
  burst_retry_base_delay_ms: z.number().int().min(0).default(5000),
});
/** A validated `llm_call` section. */
export type LlmCallConfig = z.infer<typeof LlmCallConfigSchema>;
