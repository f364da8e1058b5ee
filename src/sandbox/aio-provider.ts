// Port of DeerFlow community/aio_sandbox/aio_sandbox_provider.py (AioSandboxProvider) in its remote modes, with
// remote_backend.py (RemoteSandboxBackend: the provisioner's /api/sandboxes) and the warm-pool idle reaping of
// warm_pool_lifecycle.py. The Docker-managed local backend is not offered (see sandbox-choice.ts).
import { createHash } from "node:crypto";
import { getLogger } from "../logger.js";
import { AioHttpClient, SERVICE_NAME } from "./aio-client.js";
import { AioSandbox } from "./aio-sandbox.js";
import type { LocalSandbox } from "./local-sandbox.js";
import type { LocalSandboxProvider } from "./local-provider.js";
import type { SandboxDirs } from "./paths.js";
import { SandboxServiceError } from "./sandbox.js";

/** Default seconds a released sandbox stays before it is destroyed (DeerFlow `DEFAULT_IDLE_TIMEOUT`). */
export const DEFAULT_IDLE_TIMEOUT = 600;
/** Most seconds between two idle checks (DeerFlow `IDLE_CHECK_INTERVAL`). */
const IDLE_CHECK_SECONDS = 60;
/** Provisioner request limits in seconds (upstream: create 30, destroy 15). */
const PROVISION_TIMEOUT = { create: 30, destroy: 15 } as const;

/** The `sandbox:` keys this provider reads (the ones upstream's remote modes read, plus `base_url` / `api_key`). */
export interface AioSandboxSettings {
  /** One already running sandbox for the whole deployment; every thread works in it. */
  baseUrl?: string;
  /** Bearer token of the sandbox API, when it demands one. */
  apiKey?: string;
  /** A provisioner that hands out one sandbox per thread (`POST /api/sandboxes`). */
  provisionerUrl?: string;
  /** Sent as `X-API-Key` to the provisioner. */
  provisionerApiKey?: string;
  /** Seconds a released sandbox is kept before it is destroyed; 0 keeps it until shutdown. */
  idleTimeoutSeconds: number;
  /** Limit of one file operation on the sandbox, in seconds. */
  requestTimeoutSeconds: number;
  /** How long a new sandbox may take to answer `GET /v1/sandbox`, in seconds. */
  readyTimeoutSeconds: number;
  /** Virtual roots besides `/mnt/user-data` the agent may read (the skills path). */
  readRoots: readonly string[];
}

interface Entry {
  sandbox: AioSandbox;
  /** When the last run using it ended (ms); null while a run holds it. */
  releasedAt: number | null;
  provisioned: boolean;
}

/** Deterministic sandbox id of a (user, thread): 16 hex digits of SHA-256 (upstream's thread-keyed ids). */
export function aioSandboxId(userId: string, threadId: string): string {
  return createHash("sha256").update(`${userId}:${threadId}`).digest("hex").slice(0, 16);
}

/**
 * Hands out AIO sandboxes per thread. With `provisionerUrl` each (user, thread) gets its own sandbox from the
 * provisioner (`POST /api/sandboxes {sandbox_id, thread_id, user_id}` -> `{sandbox_url}`), waited for until it
 * answers, destroyed (`DELETE /api/sandboxes/{id}`) after `idleTimeoutSeconds` released, on thread deletion and on
 * {@link close}. With `baseUrl` every thread shares the one sandbox at that URL (one deployment, one sandbox).
 * The gateway keeps its own copy of each thread's directories ({@link sandboxFor}): uploads are stored there and
 * then written into the sandbox (upstream's sync when `thread_data_mounts` is false); artifacts are read back from
 * the sandbox. Never logs or returns a URL or key.
 */
export class AioSandboxProvider {
  /** What `/health` names as the active provider. */
  readonly kind = "aio_sandbox";
  readonly #settings: AioSandboxSettings;
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<Entry>>();
  readonly #timer: NodeJS.Timeout | null;

  /** @param local The thread directories on this host (uploads as stored, the gateway's own files). */
  constructor(
    settings: AioSandboxSettings,
    readonly local: LocalSandboxProvider,
  ) {
    this.#settings = settings;
    const every = Math.min(IDLE_CHECK_SECONDS, settings.idleTimeoutSeconds);
    this.#timer = settings.provisionerUrl && every > 0 ? setInterval(() => void this.reapIdle(), every * 1000).unref() : null;
  }

  /** Where the thread directories live on this host. */
  get baseDir(): string {
    return this.local.baseDir;
  }

  /** Which mode is in use, for the start-up log line. */
  get mode(): "provisioner" | "base_url" {
    return this.#settings.provisionerUrl ? "provisioner" : "base_url";
  }

  /**
   * The thread's sandbox id, creating (provisioner) or connecting to (base_url) its sandbox if needed; a released
   * one is taken back. @throws SandboxServiceError when the service cannot hand one out.
   */
  async acquire(threadId: string, options: { userId?: string } = {}): Promise<string> {
    return (await this.#entry(threadId, options.userId ?? "default", true)).sandbox.id;
  }

  /** The thread's remote sandbox (acquired as in {@link acquire}, held until the run ends): what the tools work in. */
  async toolSandbox(threadId: string, userId = "default"): Promise<AioSandbox> {
    return (await this.#entry(threadId, userId, true)).sandbox;
  }

  /**
   * The thread's remote sandbox for a request outside a run (uploads, artifacts): opened if needed but not held,
   * so it is still reaped once idle. @throws SandboxServiceError when the service cannot hand one out.
   */
  async remoteFor(threadId: string, userId = "default"): Promise<AioSandbox> {
    return (await this.#entry(threadId, userId, false)).sandbox;
  }

  /** The thread's directories on this host (uploads as stored by the gateway). */
  sandboxFor(threadId: string, userId = "default"): LocalSandbox {
    return this.local.sandboxFor(threadId, userId);
  }

  /** Host directories of a thread (see LocalSandboxProvider.dirsFor). */
  dirsFor(threadId: string, userId = "default"): SandboxDirs {
    return this.local.dirsFor(threadId, userId);
  }

  /** Marks the sandbox unused since now; the idle check destroys it after `idle_timeout` (upstream warm pool). */
  release(sandboxId: string): void {
    const entry = this.#entries.get(sandboxId);
    if (entry) entry.releasedAt = Date.now();
  }

  /** {@link release} of the thread's sandbox: the run worker calls it when a run ends. */
  releaseThread(threadId: string, userId = "default"): void {
    this.release(aioSandboxId(userId, threadId));
  }

  /** True while the thread's host directories are cached (see LocalSandboxProvider.has). */
  has(threadId: string, userId = "default"): boolean {
    return this.local.has(threadId, userId);
  }

  /** Destroys the thread's sandbox (provisioner mode) and deletes its host directories: thread deletion. */
  removeThread(threadId: string, userId = "default"): void {
    const id = aioSandboxId(userId, threadId);
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    if (entry?.provisioned) void this.#destroy(id);
    this.local.removeThread(threadId, userId);
  }

  /** Writes files of the thread's host uploads directory into its sandbox at the same virtual paths. */
  async syncUploads(threadId: string, userId: string, virtualPaths: readonly string[]): Promise<void> {
    const remote = await this.remoteFor(threadId, userId);
    const host = this.sandboxFor(threadId, userId);
    for (const virtual of virtualPaths) {
      const handle = await host.openFile(virtual);
      try {
        await remote.updateFile(virtual, await handle.readFile());
      } finally {
        await handle.close();
      }
    }
  }

  /** Destroys the released sandboxes idle for longer than `idle_timeout` (upstream `_reap_expired_warm`). */
  async reapIdle(now = Date.now()): Promise<void> {
    const limitMs = this.#settings.idleTimeoutSeconds * 1000;
    if (limitMs <= 0) return;
    for (const [id, entry] of this.#entries) {
      if (entry.releasedAt === null || now - entry.releasedAt < limitMs) continue;
      this.#entries.delete(id);
      if (entry.provisioned) await this.#destroy(id);
    }
  }

  /** Stops the idle check and destroys every provisioned sandbox (upstream `shutdown`). Best effort. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    const ids = [...this.#entries].filter(([, e]) => e.provisioned).map(([id]) => id);
    this.#entries.clear();
    await Promise.all(ids.map((id) => this.#destroy(id)));
  }

  /**
   * The thread's entry, opened on first use. `hold` (a run's tools) marks it in use until the run ends; without it
   * (the upload and artifact routes) a released sandbox stays released, its idle time restarted.
   */
  async #entry(threadId: string, userId: string, hold: boolean): Promise<Entry> {
    const id = aioSandboxId(userId, threadId);
    let entry = this.#entries.get(id);
    if (!entry) {
      let pending = this.#pending.get(id);
      if (!pending) {
        pending = this.#open(id, threadId, userId).finally(() => this.#pending.delete(id));
        this.#pending.set(id, pending);
      }
      entry = await pending;
      if (!hold && entry.releasedAt === null) entry.releasedAt = Date.now();
    }
    if (hold) entry.releasedAt = null;
    else if (entry.releasedAt !== null) entry.releasedAt = Date.now();
    return entry;
  }

  async #open(id: string, threadId: string, userId: string): Promise<Entry> {
    const s = this.#settings;
    const url = s.provisionerUrl ? await this.#provision(id, threadId, userId) : s.baseUrl!;
    const client = new AioHttpClient({ baseUrl: url, apiKey: s.apiKey, timeoutMs: s.requestTimeoutSeconds * 1000 });
    if (s.provisionerUrl && !(await this.#waitReady(client))) {
      void this.#destroy(id);
      throw new SandboxServiceError(`${SERVICE_NAME}: the new sandbox did not become ready within ${s.readyTimeoutSeconds} s`, "timeout");
    }
    const sandbox = new AioSandbox(id, threadId, userId, client, s.readRoots);
    // The agent's three areas exist before its first command (a fresh container may lack them).
    await sandbox.execute("mkdir -p /mnt/user-data/workspace /mnt/user-data/uploads /mnt/user-data/outputs", { timeoutSeconds: s.requestTimeoutSeconds });
    const entry: Entry = { sandbox, releasedAt: null, provisioned: Boolean(s.provisionerUrl) };
    this.#entries.set(id, entry);
    getLogger().info({ sandbox_id: id, thread_id: threadId, mode: this.mode }, "aio sandbox acquired");
    return entry;
  }

  async #waitReady(client: AioHttpClient): Promise<boolean> {
    const deadline = Date.now() + this.#settings.readyTimeoutSeconds * 1000;
    while (Date.now() < deadline) {
      if (await client.ready(Math.min(5000, Math.max(1, deadline - Date.now())))) return true;
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))));
    }
    return false;
  }

  async #provisioner(method: string, route: string, body: unknown, timeoutSeconds: number): Promise<Response> {
    const s = this.#settings;
    const headers: Record<string, string> = { "content-type": "application/json", ...(s.provisionerApiKey ? { "x-api-key": s.provisionerApiKey } : {}) };
    try {
      return await fetch(`${s.provisionerUrl!.replace(/\/+$/, "")}${route}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutSeconds * 1000), redirect: "error" });
    } catch (err) {
      const timedOut = (err as Error).name === "TimeoutError";
      throw new SandboxServiceError(timedOut ? `the sandbox provisioner did not answer within ${timeoutSeconds} s` : "the sandbox provisioner is unreachable (connection failed)", timedOut ? "timeout" : "unreachable");
    }
  }

  async #provision(id: string, threadId: string, userId: string): Promise<string> {
    const res = await this.#provisioner("POST", "/api/sandboxes", { sandbox_id: id, thread_id: threadId, user_id: userId }, PROVISION_TIMEOUT.create);
    const data = (await res.json().catch(() => null)) as { sandbox_url?: unknown } | null;
    if (!res.ok || typeof data?.sandbox_url !== "string" || !data.sandbox_url) {
      throw new SandboxServiceError(`the sandbox provisioner could not create a sandbox (HTTP ${res.status})`, "http");
    }
    return data.sandbox_url;
  }

  async #destroy(id: string): Promise<void> {
    try {
      const res = await this.#provisioner("DELETE", `/api/sandboxes/${encodeURIComponent(id)}`, undefined, PROVISION_TIMEOUT.destroy);
      await res.body?.cancel();
      getLogger().info({ sandbox_id: id, status: res.status }, "aio sandbox destroyed");
    } catch (err) {
      getLogger().warn({ sandbox_id: id, err: (err as Error).message }, "aio sandbox destroy failed");
    }
  }
}
