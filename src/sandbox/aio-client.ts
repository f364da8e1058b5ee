// The HTTP client of DeerFlow's container sandbox (the agent-infra "all-in-one" sandbox API that upstream reaches
// through the `agent_sandbox` Python SDK in community/aio_sandbox/aio_sandbox.py). No npm client of that API is
// published, so this speaks it with fetch: JSON bodies, answers wrapped as `{success, message, data}`.
import { SandboxServiceError } from "./sandbox.js";

/** How the service is named in every error the model or a client sees (never its URL or token). */
export const SERVICE_NAME = "the sandbox service (aio_sandbox)";
/** Longest service message quoted in an error, in characters. */
const MAX_MESSAGE_CHARS = 300;

/** Options of {@link AioHttpClient}. */
export interface AioHttpClientOptions {
  /** The sandbox's base URL (`http://host:8080`); kept private, never put in messages or logs. */
  baseUrl: string;
  /** Optional bearer token the service expects (`Authorization: Bearer ...`). */
  apiKey?: string;
  /** Default per-request limit in milliseconds. */
  timeoutMs: number;
}

/** Per-call options: a limit other than the default, and the run's cancellation signal. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Error codes a file operation's failure maps to, from the service's message (the tools word them). */
function fsCodeOf(message: string): string | undefined {
  if (/no such file|not found|does not exist/i.test(message)) return "ENOENT";
  if (/is a directory/i.test(message)) return "EISDIR";
  if (/not a directory/i.test(message)) return "ENOTDIR";
  if (/permission denied/i.test(message)) return "EACCES";
  return undefined;
}

/** The service's own error text: `message`, `detail` (FastAPI) or the raw body, shortened. */
function serviceMessage(body: unknown, raw: string): string {
  const obj = (body ?? {}) as { message?: unknown; detail?: unknown };
  const text = typeof obj.message === "string" ? obj.message : typeof obj.detail === "string" ? obj.detail : obj.detail ? JSON.stringify(obj.detail) : raw;
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/**
 * A thin client of one sandbox's HTTP API. Every failure becomes a {@link SandboxServiceError} that names the
 * service but not its address: unreachable, no answer within the limit, or an error answer (HTTP status and the
 * service's message). A file-operation answer that says "not found" / "is a directory" is thrown as an Error
 * with the matching `code` (ENOENT, EISDIR, ...), so the tools word it as they do for local files.
 */
export class AioHttpClient {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;

  constructor(options: AioHttpClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#headers = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
    this.#timeoutMs = options.timeoutMs;
  }

  /**
   * `POST <route>` with a JSON body; returns the answer's `data`.
   * @throws SandboxServiceError; an Error with a file-system `code` for a file the service says is missing.
   */
  async post<T>(route: string, body: unknown, options: CallOptions = {}): Promise<T> {
    const res = await this.#send(route, { method: "POST", headers: { ...this.#headers, "content-type": "application/json" }, body: JSON.stringify(body) }, options);
    const raw = await res.text();
    let parsed: { success?: boolean; message?: string; data?: T } | undefined;
    try {
      parsed = raw ? JSON.parse(raw) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok || parsed?.success === false) this.#fail(res.status, parsed, raw);
    if (parsed === undefined) throw new SandboxServiceError(`${SERVICE_NAME} answered ${route} with a body that is not JSON`, "http");
    return parsed.data as T;
  }

  /**
   * `GET <route>?<query>`; returns the body's bytes, refusing more than `maxBytes`.
   * @throws SandboxServiceError; Error with code ENOENT on 404; Error with code EFBIG past `maxBytes`.
   */
  async getBytes(route: string, query: Record<string, string>, maxBytes: number, options: CallOptions = {}): Promise<Buffer> {
    const res = await this.#send(`${route}?${new URLSearchParams(query)}`, { method: "GET", headers: this.#headers }, options);
    if (!res.ok) {
      const raw = await res.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = undefined;
      }
      if (res.status === 404) throw Object.assign(new Error(serviceMessage(parsed, raw)), { code: "ENOENT" });
      this.#fail(res.status, parsed, raw);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body ?? []) {
      total += (chunk as Uint8Array).byteLength;
      if (total > maxBytes) throw Object.assign(new Error(`File exceeds the ${maxBytes}-byte download limit`), { code: "EFBIG" });
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
    return Buffer.concat(chunks);
  }

  /** True when `GET /v1/sandbox` answers 200 within `timeoutMs` (upstream `wait_for_sandbox_ready`'s probe). */
  async ready(timeoutMs = 5000): Promise<boolean> {
    try {
      const res = await this.#send("/v1/sandbox", { method: "GET", headers: this.#headers }, { timeoutMs });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  }

  /** fetch with the limit, mapping network failures and timeouts to SandboxServiceError (the URL left out). */
  async #send(route: string, init: RequestInit, options: CallOptions): Promise<Response> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    try {
      return await fetch(`${this.#baseUrl}${route}`, { ...init, signal, redirect: "error" });
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason ?? err;
      if (timeout.aborted) throw new SandboxServiceError(`${SERVICE_NAME} did not answer within ${Math.round(timeoutMs / 100) / 10} s`, "timeout");
      throw new SandboxServiceError(`${SERVICE_NAME} is unreachable (connection failed); the sandbox may be down`, "unreachable");
    }
  }

  #fail(status: number, body: unknown, raw: string): never {
    const message = serviceMessage(body, raw);
    // A 4xx (or a 200 with success: false) about a missing file is the agent's mistake, not the service's failure.
    const code = status < 500 ? fsCodeOf(message) : undefined;
    if (code) throw Object.assign(new Error(message), { code });
    throw new SandboxServiceError(`${SERVICE_NAME} answered HTTP ${status}${message ? `: ${message}` : ""}`, "http");
  }
}
