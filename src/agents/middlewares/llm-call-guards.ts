// The process-wide state behind LLMErrorHandlingMiddleware (DeerFlow _ProcessWideLimiter and the middleware's
// circuit fields): one circuit per provider and one cap on model calls in flight, shared by every agent build.
import type { CircuitBreakerConfig } from "./llm-error-handling-options.js";

/**
 * A circuit breaker (upstream's three states): `failure_threshold` failures in a row open it for
 * `recovery_timeout_sec`; then it is half-open and admits one probe call, whose success closes it and whose
 * failure opens it again. A success resets the count.
 */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private state: "closed" | "open" | "half_open" = "closed";
  private probing = false;

  constructor(public config: CircuitBreakerConfig, private readonly now: () => number = Date.now) {}

  /** Whether a call may go out now (a half-open circuit admits one probe at a time). */
  admit(): boolean {
    if (this.state === "open") {
      if (this.now() < this.openUntil) return false;
      this.state = "half_open";
      this.probing = false;
    }
    if (this.state === "half_open") {
      if (this.probing) return false;
      this.probing = true;
    }
    return true;
  }

  /** A call succeeded: the circuit closes. */
  success(): void {
    this.failures = 0;
    this.state = "closed";
    this.probing = false;
  }

  /** A call failed for good with a provider failure: counts toward opening; a failed probe reopens at once. */
  failure(): void {
    this.failures++;
    if (this.state === "half_open" || this.failures >= this.config.failure_threshold) {
      this.state = "open";
      this.openUntil = this.now() + this.config.recovery_timeout_sec * 1000;
    }
    this.probing = false;
  }

  /** A call ended without a verdict on the provider (aborted, or a non-provider error): frees the probe. */
  release(): void {
    this.probing = false;
  }

  /** `closed`, `open` or `half_open` (as of now). */
  get current(): string {
    return this.state === "open" && this.now() >= this.openUntil ? "half_open" : this.state;
  }
}

const breakers = new Map<string, CircuitBreaker>();

/** The process's circuit for `provider`, created on first use; a reloaded `circuit_breaker` section applies to it. */
export function breakerFor(provider: string, config: CircuitBreakerConfig): CircuitBreaker {
  let b = breakers.get(provider);
  if (!b) breakers.set(provider, (b = new CircuitBreaker(config)));
  else b.config = config;
  return b;
}

/** A counting semaphore (FIFO waiters); `limit` 0 admits everything. */
export class CallSlots {
  private inFlight = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Runs `fn` once a slot is free; a waiter whose run is aborted leaves the queue with the abort reason. */
  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.limit <= 0) return fn();
    if (this.inFlight >= this.limit) await this.wait(signal);
    else this.inFlight++;
    try {
      return await fn();
    } finally {
      const next = this.waiters.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  private wait(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i !== -1) this.waiters.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }
}

let slots: CallSlots | null = null;

/**
 * The process-wide slots, sized by the first call's `max_concurrent_calls` and frozen for the process (upstream
 * freezes the cap at the first LLM run: a later config edit needs a restart).
 */
export function callSlots(limit: number): CallSlots {
  slots ??= new CallSlots(limit);
  return slots;
}
