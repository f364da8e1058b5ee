// The per-user run queries of the operations console (DeerFlow app/gateway/routers/console.py): one user's runs
// across all their threads, their headline counters and their token usage. A run belongs to the owner of its thread
// (the run table has no user column), so every query joins `runs` with `threads` on `thread_id`. The repository
// methods are declared on `RunRepository` (repositories.ts); their shapes live here.
/** Run statuses counted as active (DeerFlow console `_ACTIVE_STATUSES`). */
export const ACTIVE_RUN_STATUSES = ["pending", "running"] as const;
/** Run statuses counted as failed (DeerFlow console `_FAILED_STATUSES`). */
export const FAILED_RUN_STATUSES = ["error", "timeout"] as const;

/** A page of one owner's runs, newest first (`created_at` desc, insertion order desc on ties). */
export interface OwnerRunPage {
  ownerId: string;
  limit: number;
  offset: number;
  /** Only runs with exactly this status. */
  status?: string;
}

/** Headline counters of one owner's runs (DeerFlow `ConsoleStatsResponse` run fields). */
export interface OwnerRunStats {
  total_runs: number;
  /** `pending` or `running`. */
  active_runs: number;
  /** `error` or `timeout`. */
  failed_runs: number;
  /** Sum of the runs' `total_tokens` counters. */
  total_tokens: number;
  /** The owner's threads (with or without runs). */
  total_threads: number;
}

/** One run's usage, the fields cost and usage aggregation read. Timestamps are ISO strings (UTC). */
export interface RunUsageRow {
  run_id: string;
  created_at: string;
  /** The model the run resolved to (`metadata.model_name`), null when it never got that far. */
  model_name: string | null;
  total_input_tokens: number;
  total_output_tokens: number;
  total_tokens: number;
}

/** A number read from a database aggregate or JSON field (null, text or bigint included); 0 when not finite. */
export function countOf(value: unknown): number {
  const n = typeof value === "bigint" ? Number(value) : Number(value ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/** A usage row as read from either store: counters default to 0, a model name that is not text to null. */
export function usageRow(row: Record<keyof RunUsageRow, unknown>): RunUsageRow {
  return {
    run_id: String(row.run_id),
    created_at: String(row.created_at),
    model_name: typeof row.model_name === "string" && row.model_name ? row.model_name : null,
    total_input_tokens: countOf(row.total_input_tokens),
    total_output_tokens: countOf(row.total_output_tokens),
    total_tokens: countOf(row.total_tokens),
  };
}
