// One platform API call with the platforms' retry rules: a 429 waits what the platform asks (Telegram's
// `parameters.retry_after`, Slack's `Retry-After` header), a 5xx or a network error backs off exponentially, each
// within a bounded number of tries and a bounded wait, so a reply is delayed, not lost, while the platform sheds load.
import { PlatformError } from "./types.js";

/** Retry limits of {@link callPlatform}. */
export interface RetryPolicy {
  /** Tries in all (default 4). */
  attempts: number;
  /** First backoff after a 5xx / network error, in ms, doubled each try (default 250). */
  baseDelayMs: number;
  /** The longest single wait, in ms, whatever the platform asks (default 30 000). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 250, maxDelayMs: 30_000 };

/** What a platform answered: status and parsed JSON body (null when not JSON), plus its headers. */
export interface PlatformAnswer {
  status: number;
  body: Record<string, unknown> | null;
  headers: Headers;
}

/** How an adapter reads an answer: `ok`, `retry` after a wait (ms) or at the next backoff, or a final error. */
export type Verdict = { kind: "ok" } | { kind: "retry"; afterMs?: number } | { kind: "fail"; error: PlatformError };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends `body` as JSON to `url` (POST unless `options.method` says PATCH / GET; GET sends no body) and retries per `judge` and `policy`. Counts every HTTP request in `counter`.
 * @returns the accepted answer. @throws PlatformError when `judge` fails it or the tries are spent (`rate_limited`
 *   after 429s, `other` after 5xx / network errors).
 */
export async function callPlatform(
  provider: string,
  url: string,
  body: unknown,
  judge: (answer: PlatformAnswer) => Verdict,
  options: { method?: "POST" | "PATCH" | "GET"; headers?: Record<string, string>; policy?: RetryPolicy; counter?: { calls: number }; signal?: AbortSignal } = {},
): Promise<PlatformAnswer> {
  const policy = options.policy ?? DEFAULT_RETRY;
  let lastKind: PlatformError["kind"] = "other";
  let lastMessage = "no answer";
  for (let attempt = 0; attempt < policy.attempts; attempt++) {
    let verdict: Verdict;
    let answer: PlatformAnswer | null = null;
    try {
      if (options.counter) options.counter.calls++;
      const method = options.method ?? "POST";
      const res = await fetch(url, { method, headers: { "content-type": "application/json; charset=utf-8", ...options.headers }, body: method === "GET" ? undefined : JSON.stringify(body), signal: options.signal ?? AbortSignal.timeout(60_000) });
      const text = await res.text();
      let parsed: Record<string, unknown> | null = null;
      try {
        parsed = text ? (JSON.parse(text) as Record<string, unknown>) : null;
      } catch {
        parsed = null;
      }
      answer = { status: res.status, body: parsed, headers: res.headers };
      verdict = judge(answer);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      verdict = { kind: "retry" };
      lastMessage = `network error: ${(err as Error).message}`;
    }
    if (verdict.kind === "ok" && answer) return answer;
    if (verdict.kind === "fail") throw verdict.error;
    const afterMs = verdict.kind === "retry" ? verdict.afterMs : undefined;
    if (answer) {
      lastKind = answer.status === 429 || afterMs !== undefined ? "rate_limited" : "other";
      lastMessage = `HTTP ${answer.status}`;
    }
    if (attempt + 1 < policy.attempts) await sleep(Math.min(policy.maxDelayMs, afterMs ?? policy.baseDelayMs * 2 ** attempt));
  }
  throw new PlatformError(provider, lastKind, `${provider} API call failed after ${policy.attempts} tries (${lastMessage})`);
}

/** The `Retry-After` header in ms (seconds form), or undefined. */
export function retryAfterHeaderMs(headers: Headers): number | undefined {
  const v = Number(headers.get("retry-after"));
  return Number.isFinite(v) && v >= 0 ? v * 1000 : undefined;
}
