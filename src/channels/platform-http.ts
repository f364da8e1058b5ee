// One platform API call with the platforms' retry rules: a 429 waits what the platform asks (Telegram's
// `parameters.retry_after`, Slack's `Retry-After` header), a 5xx or a network error backs off exponentially, each
// within a bounded number of tries and a bounded wait, so a reply is delayed, not lost, while the platform sheds load.
import { FileTooLargeError, PlatformError } from "./types.js";

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

/** A request body sent as it is (multipart or form-encoded), instead of as JSON. */
function isRawBody(body: unknown): body is FormData | URLSearchParams {
  return body instanceof FormData || body instanceof URLSearchParams;
}

/**
 * Sends `body` to `url` (POST unless `options.method` says PATCH / PUT / GET; GET sends no body): as JSON, or a FormData /
 * URLSearchParams as multipart / form-encoded. Retries per `judge` and `policy`; counts every HTTP request in `counter`.
 * @returns the accepted answer. @throws PlatformError when `judge` fails it or the tries are spent (`rate_limited`
 *   after 429s, `other` after 5xx / network errors).
 */
export async function callPlatform(
  provider: string,
  url: string,
  body: unknown,
  judge: (answer: PlatformAnswer) => Verdict,
  options: { method?: "POST" | "PATCH" | "PUT" | "GET"; headers?: Record<string, string>; policy?: RetryPolicy; counter?: { calls: number }; signal?: AbortSignal } = {},
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
      // fetch sets the multipart boundary / form content type itself for a raw body.
      const headers = isRawBody(body) ? { ...options.headers } : { "content-type": "application/json; charset=utf-8", ...options.headers };
      const payload = method === "GET" ? undefined : isRawBody(body) ? body : JSON.stringify(body);
      const res = await fetch(url, { method, headers, body: payload, signal: options.signal ?? AbortSignal.timeout(60_000) });
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

/**
 * GETs a platform file (Telegram's file URL, Slack's `url_private_download`) and reads at most `maxBytes`: a
 * `Content-Length` or a body beyond it stops the download ({@link FileTooLargeError}). 5xx and network errors are
 * tried again (3 tries, 250 ms backoff doubled). `onHeaders` sees the accepted answer's headers (a file name).
 * `redirect: "error"` refuses a redirect (a failed download) instead of following it (default `follow`).
 * @throws FileTooLargeError; PlatformError (`auth` on 401/403, else `other`).
 */
export async function downloadPlatformFile(provider: string, url: string, filename: string, maxBytes: number, options: { headers?: Record<string, string>; counter?: { calls: number }; onHeaders?: (headers: Headers) => void; redirect?: "follow" | "error" } = {}): Promise<Buffer> {
  let last = "no answer";
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await sleep(250 * 2 ** (attempt - 1));
    if (options.counter) options.counter.calls++;
    let res: Response;
    try {
      res = await fetch(url, { headers: options.headers, redirect: options.redirect ?? "follow", signal: AbortSignal.timeout(120_000) });
    } catch (err) {
      last = `network error: ${(err as Error).message}`;
      continue;
    }
    if (res.status >= 500) {
      await res.body?.cancel();
      last = `HTTP ${res.status}`;
      continue;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new PlatformError(provider, res.status === 401 || res.status === 403 ? "auth" : "other", `${provider} refused the file download: HTTP ${res.status}`);
    }
    options.onHeaders?.(res.headers);
    if (Number(res.headers.get("content-length") ?? 0) > maxBytes) {
      await res.body.cancel();
      throw new FileTooLargeError(filename, maxBytes);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > maxBytes) throw new FileTooLargeError(filename, maxBytes);
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks);
  }
  throw new PlatformError(provider, "other", `${provider} file download failed after 3 tries (${last})`);
}
