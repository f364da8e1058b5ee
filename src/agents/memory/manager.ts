// Port of DeerFlow agents/memory/manager.py: the backend-neutral memory contract. The factory that picks a backend by
// `memory.manager_class` lives in build-manager.ts, so the backends can import this contract without a cycle.
import type { BaseMessage } from "@langchain/core/messages";
import type { AppConfig } from "../../config/schema.js";
import { DeerflowError } from "../../errors.js";
import type { MemoryConfig } from "./memory-config.js";
import type { MemoryDocument, MemoryFact } from "./memory-document.js";

/** Whose memory: memories are bucketed per (user, agent); agent `default` is the default agent. */
export interface MemoryScope {
  userId: string;
  agentName: string;
}

/** A fact found by {@link MemoryManager.search}: the stored fact without its correction detail. */
export type MemorySearchHit = Pick<MemoryFact, "id" | "content" | "category" | "confidence" | "createdAt" | "source">;

/** Fields of a fact edit; omitted fields keep their value. */
export interface MemoryFactPatch {
  content?: string | null;
  category?: string | null;
  confidence?: number | null;
}

/** Thrown by a management operation the backend does not support (the routes answer 501, the tools a JSON error). */
export class MemoryUnsupportedError extends DeerflowError {
  constructor(backend: string, operation: string) {
    super("unsupported", `Operation '${operation}' not supported by memory backend '${backend}'`);
  }
}

/** Thrown by fact edits for an unknown fact id (404). */
export class MemoryFactNotFoundError extends DeerflowError {
  constructor(id: string) {
    super("not_found", `Memory fact '${id}' not found`);
  }
}

/**
 * Thrown when a memory write lost a compare-and-set on the document's revision: another writer (another request,
 * the updater, another process) committed first, or an expected revision is stale. HTTP 409 with upstream's detail.
 */
export class MemoryConflictError extends DeerflowError {
  constructor() {
    super("conflict", "Memory changed concurrently; reload and retry.");
  }
}

/** Thrown when `memory.manager_class` cannot be resolved or does not give a MemoryManager. */
export class MemoryManagerConfigError extends DeerflowError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("config_invalid", message, options);
  }
}

/**
 * The memory contract (DeerFlow `MemoryManager`). Required: {@link add}, {@link getContext}, {@link flush},
 * {@link shutdownFlush} and {@link forget}. The management operations are optional: a backend that lacks one
 * leaves it undefined (or throws {@link MemoryUnsupportedError}), and the memory routes answer 501. The format of
 * {@link getContext}'s text is the backend's own choice; callers inject it verbatim inside `<memory>`.
 */
export interface MemoryManager {
  /** Backend name for logs and errors (`deermem`, `noop`, or the class name). */
  readonly name: string;
  /** True when {@link search} is implemented; `memory.mode: tool` requires it (checked at start-up). */
  readonly supportsSearch: boolean;
  /** True when the backend still wants {@link add} calls in tool mode (conversation-level extraction). */
  readonly requiresPassiveWritesInToolMode?: boolean;
  /**
   * Queues a finished turn for a memory update (debounced, asynchronous). Never throws for backend trouble: errors
   * are logged. `messages` are the raw conversation; the backend filters them.
   * @throws InvalidMemoryScopeError-like errors for a scope that cannot be stored (bad ids).
   */
  add(threadId: string, messages: BaseMessage[], scope: MemoryScope): void;
  /** Injection-ready memory text for the scope ("" when there is nothing to inject). */
  getContext(scope: MemoryScope & { threadId?: string }): Promise<string>;
  /** Applies the pending updates of `scope` (all when omitted) now; resolves when they are written (tests, reload). */
  flush(scope?: MemoryScope): Promise<void>;
  /**
   * Bounded drain on server close: applies pending updates for at most `timeoutMs` ms. Resolves true when all
   * were written in time, false on timeout or failure (the tail is dropped).
   */
  shutdownFlush(timeoutMs: number): Promise<boolean>;
  /** Erases the scope's memory and drops its pending updates (an agent is deleted). */
  forget(scope: MemoryScope): Promise<void>;
  /** The scope's full memory document. */
  getMemory?(scope: MemoryScope): Promise<MemoryDocument>;
  /** Drops any cache and reads the scope's memory from storage again. */
  reloadMemory?(scope: MemoryScope): Promise<MemoryDocument>;
  /** Clears the scope's memory; returns the (empty) document. */
  clearMemory?(scope: MemoryScope): Promise<MemoryDocument>;
  /** Replaces the scope's summaries and facts with `doc`; returns the stored document. */
  importMemory?(scope: MemoryScope, doc: MemoryDocument): Promise<MemoryDocument>;
  /** Adds a fact; returns the document and the new fact's id (null when the capacity policy evicted it at once). */
  createFact?(scope: MemoryScope, fact: { content: string; category: string; confidence: number }): Promise<{ memory: MemoryDocument; factId: string | null }>;
  /** @throws MemoryFactNotFoundError */
  updateFact?(scope: MemoryScope, id: string, patch: MemoryFactPatch): Promise<MemoryDocument>;
  /** @throws MemoryFactNotFoundError */
  deleteFact?(scope: MemoryScope, id: string): Promise<MemoryDocument>;
  /** Facts matching `query`, best first; `category` filters before the `topK` cut. */
  search?(scope: MemoryScope, query: string, options?: { topK?: number; category?: string | null }): Promise<MemorySearchHit[]>;
}

/** What a backend is built from: the memory section, the live config (model lookups) and the runtime home. */
export interface MemoryManagerInit {
  /** `memory.backend_config` as loaded (validated and defaulted for `deermem`, verbatim for others). */
  backendConfig: Record<string, unknown>;
  mode: MemoryConfig["mode"];
  /** The current app config (re-read on every use, so hot-reloadable knobs follow config.yaml). */
  getAppConfig: () => AppConfig;
  /** The runtime home (`DEER_FLOW_HOME`) the gateway serves; default resolved from the environment. */
  home?: string;
}

/** A constructor a `module:Export` path may name. */
export type MemoryManagerClass = new (init: MemoryManagerInit) => MemoryManager;

/**
 * Races `work` against `timeoutMs`: true when it settled in time without error, false otherwise. The work is not
 * cancelled (a running model call cannot be), only no longer awaited.
 */
export async function withinTimeout(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
    timer.unref?.();
  });
  try {
    return await Promise.race([work.then(() => true as const), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
