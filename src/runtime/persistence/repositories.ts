// The records and repository interfaces the runtime stores threads and runs through, implemented on SQLite
// (thread-store.ts, run-store.ts; the embedded default) and PostgreSQL (pg-stores.ts; shared by several gateway
// processes). The record types live here, not beside their stores, so the stores import this module and never the
// reverse.
import type { RunCounters } from "../runs/run-counters.js";
import type { MultitaskStrategy, RunStatus, ThreadStatus } from "../wire/wire-enums.js";
import type { OwnerRunPage, OwnerRunStats, RunUsageRow } from "./owner-runs.js";

/** The Run resource as the API returns it (LangGraph API `Run`). Timestamps are ISO strings. */
export interface RunRecord extends Partial<RunCounters> {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  status: RunStatus;
  metadata: Record<string, unknown>;
  kwargs: { input: unknown; config: unknown };
  multitask_strategy: MultitaskStrategy;
  created_at: string;
  updated_at: string;
  error?: string;
}

/** A stored thread row. Timestamps are ISO strings. */
export interface ThreadRecord {
  thread_id: string;
  /** The user who owns the thread (the principal that created it); other users see it as missing. */
  owner_id: string;
  status: ThreadStatus;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

/** Filters of {@link RunRepository.list}. */
export interface RunListOptions {
  limit?: number;
  offset?: number;
  status?: RunStatus;
}

/** Query of {@link ThreadRepository.search}. */
export interface ThreadSearchQuery {
  /** Only threads of this owner. */
  ownerId?: string;
  /** Every key must equal (same JSON type and value) the thread's metadata key. */
  metadata?: Record<string, unknown>;
  status?: ThreadStatus;
  /** Restricts the result to these ids. */
  ids?: string[];
  limit: number;
  offset: number;
  /** One of thread_id, status, created_at, updated_at (anything else: updated_at). */
  sortBy?: string;
  sortOrder?: "asc" | "desc";
}

/** The LangGraph `threads` table. Every method is atomic on its own. */
export interface ThreadRepository {
  /** The thread whoever owns it, or null (for the server's own bookkeeping; routes use `getOwned`). */
  get(threadId: string): Promise<ThreadRecord | null>;
  /** The thread when `ownerId` owns it, else null (another user's thread reads exactly as a missing one). */
  getOwned(threadId: string, ownerId: string): Promise<ThreadRecord | null>;
  /**
   * Creates the thread if absent, owned by `ownerId` (default user when omitted); idempotent: an existing thread
   * is returned unchanged, whoever owns it.
   */
  create(threadId: string, metadata?: Record<string, unknown>, ownerId?: string): Promise<ThreadRecord>;
  /**
   * Creates the thread `busy`, owned by `ownerId`, for a run about to start on it (a stateless run's thread); an
   * existing thread is left unchanged, whoever owns it. Resolves true when this call created it.
   */
  createForRun(threadId: string, ownerId: string): Promise<boolean>;
  /** Merges `metadata` into the thread's metadata (server-owned keys dropped); null for an unknown thread. */
  patchMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord | null>;
  /** Deletes the thread row; resolves whether it existed. */
  delete(threadId: string): Promise<boolean>;
  /** Threads matching the query, sorted (default `updated_at desc`) and paged. */
  search(query: ThreadSearchQuery): Promise<ThreadRecord[]>;
  /** Threads left `busy` by a process that died mid-run go back to `idle`; resolves how many. */
  resetBusy(): Promise<number>;
  /** Sets the status (and `updated_at`). No-op for an unknown thread. */
  setStatus(threadId: string, status: ThreadStatus): Promise<void>;
}

/** The console's per-user run queries (owner-runs.ts); both run stores answer each with one statement. */
export interface RunOwnerQueries {
  /** One page of `ownerId`'s runs across their threads, newest first. */
  listByOwner(page: OwnerRunPage): Promise<RunRecord[]>;
  /** Counters over all of `ownerId`'s runs. */
  statsByOwner(ownerId: string): Promise<OwnerRunStats>;
  /** Usage rows of `ownerId`'s runs created at or after `since` (ISO; all when omitted), oldest first. */
  usageByOwner(ownerId: string, since?: string): Promise<RunUsageRow[]>;
}

/** The run table: finished and in-flight run records, and the console's per-user queries. */
export interface RunRepository extends RunOwnerQueries {
  /** Inserts a run record, or updates its status, metadata, timestamps, error and counters (`kwargs` never change). */
  save(record: RunRecord): Promise<void>;
  /** The run, or null. */
  get(runId: string): Promise<RunRecord | null>;
  /** Runs of a thread, newest first (default 10 from offset 0). */
  list(threadId: string, options?: RunListOptions): Promise<RunRecord[]>;
  /** Deletes one run. */
  delete(runId: string): Promise<void>;
  /** Deletes a thread's runs. */
  deleteThread(threadId: string): Promise<void>;
  /**
   * Marks runs left `pending` or `running` as `interrupted` (error "Interrupted by a server restart"); with
   * `runIds`, only those. Resolves how many were marked.
   */
  interruptOrphans(runIds?: string[]): Promise<number>;
}
