// The operations console (DeerFlow app/gateway/routers/console.py): one user's headline counters, their runs across
// threads and their token usage over local days, with spend estimated from `models[*].pricing`. Read-only: it queries
// the run repository's per-owner statements (persistence/owner-runs.ts) and never widens the run path.
import { ACTIVE_RUN_STATUSES, type RunUsageRow } from "../persistence/owner-runs.js";
import type { RunRepository } from "../persistence/repositories.js";
import { buildPricingMap, pricingCurrency, round6, runCost, type PricedModel, type PricingMap } from "./pricing.js";

/** Cap of the error excerpt in the run list (upstream `_ERROR_EXCERPT_CHARS`); the full text stays on the run. */
export const ERROR_EXCERPT_CHARS = 300;
const DAY_MS = 86_400_000;

/** What the console reads, given by the route per request. */
export interface ConsoleDeps {
  runs: RunRepository;
  /** The configured models (their `pricing` keys); read per request so config edits apply. */
  models: readonly PricedModel[];
  /** The display title of a thread (its state's `title`), or null. */
  threadTitle(threadId: string): Promise<string | null>;
}

/** `GET /api/console/stats` (upstream `ConsoleStatsResponse`). */
export interface ConsoleStats {
  total_runs: number;
  active_runs: number;
  failed_runs: number;
  total_threads: number;
  total_agents: number;
  total_tokens: number;
  /** Spend over every priced run; null without `models[*].pricing`. */
  total_cost: number | null;
  currency: string | null;
}

/** One row of `GET /api/console/runs` (upstream `ConsoleRunItem`). Timestamps are ISO strings. */
export interface ConsoleRunItem {
  run_id: string;
  thread_id: string;
  thread_title: string | null;
  assistant_id: string | null;
  status: string;
  model_name: string | null;
  created_at: string | null;
  updated_at: string | null;
  /** Seconds, wall clock; for an active run the time since it was created. */
  duration_seconds: number | null;
  total_tokens: number;
  message_count: number;
  cost: number | null;
  /** The first {@link ERROR_EXCERPT_CHARS} characters of a failed run's error. */
  error: string | null;
}

/** One local day of `GET /api/console/usage`. */
export interface ConsoleUsageDay {
  date: string;
  total_tokens: number;
  input_tokens: number;
  output_tokens: number;
  runs: number;
  cost: number;
}

/** Usage attributed to one model. */
export interface ConsoleUsageModel {
  tokens: number;
  runs: number;
  cost: number | null;
  input_tokens: number;
  cache_read_tokens: number;
}

/** `GET /api/console/usage` (upstream `ConsoleUsageResponse`). */
export interface ConsoleUsage {
  days: ConsoleUsageDay[];
  by_model: Record<string, ConsoleUsageModel>;
  total_tokens: number;
  total_runs: number;
  total_cost: number | null;
  currency: string | null;
}

/** Summed spend of `rows` (null without pricing). */
function totalCost(pricing: PricingMap, rows: RunUsageRow[]): number | null {
  if (!pricing.size) return null;
  let sum = 0;
  for (const row of rows) sum += runCost(pricing, row) ?? 0;
  return round6(sum);
}

/** The headline counters of `userId` (`totalAgents`: their custom agents, counted by the caller). */
export async function consoleStats(deps: ConsoleDeps, userId: string, totalAgents: number): Promise<ConsoleStats> {
  const pricing = buildPricingMap(deps.models);
  const stats = await deps.runs.statsByOwner(userId);
  // Cost needs each run's model and tokens: read only when something is priced (upstream does the same).
  const total_cost = pricing.size ? totalCost(pricing, await deps.runs.usageByOwner(userId)) : null;
  return { ...stats, total_agents: totalAgents, total_cost, currency: pricingCurrency(pricing) };
}

/** A page of `userId`'s runs across threads, newest first; `has_more` when another page follows. */
export async function consoleRuns(deps: ConsoleDeps, userId: string, page: { limit: number; offset: number; status?: string }, now = new Date()): Promise<{ runs: ConsoleRunItem[]; has_more: boolean }> {
  const rows = await deps.runs.listByOwner({ ownerId: userId, limit: page.limit + 1, offset: page.offset, status: page.status || undefined });
  const pricing = buildPricingMap(deps.models);
  const titles = new Map<string, Promise<string | null>>();
  const items = rows.slice(0, page.limit).map(async (run): Promise<ConsoleRunItem> => {
    if (!titles.has(run.thread_id)) titles.set(run.thread_id, deps.threadTitle(run.thread_id).catch(() => null));
    const created = Date.parse(run.created_at);
    const end = (ACTIVE_RUN_STATUSES as readonly string[]).includes(run.status) ? now.getTime() : Date.parse(run.updated_at);
    const duration = Number.isFinite(created) && Number.isFinite(end) ? Math.max((end - created) / 1000, 0) : null;
    const model = typeof run.metadata?.model_name === "string" && run.metadata.model_name ? run.metadata.model_name : null;
    const cost = runCost(pricing, { model_name: model, total_input_tokens: run.total_input_tokens ?? 0, total_output_tokens: run.total_output_tokens ?? 0 });
    return {
      run_id: run.run_id, thread_id: run.thread_id, thread_title: await titles.get(run.thread_id)!, assistant_id: run.assistant_id ?? null,
      status: run.status, model_name: model, created_at: run.created_at ?? null, updated_at: run.updated_at ?? null, duration_seconds: duration,
      total_tokens: run.total_tokens ?? 0, message_count: run.message_count ?? 0, cost: cost === null ? null : round6(cost),
      error: run.error ? [...run.error].slice(0, ERROR_EXCERPT_CHARS).join("") : null,
    };
  });
  return { runs: await Promise.all(items), has_more: rows.length > page.limit };
}

/** `YYYY-MM-DD` of a UTC epoch-ms instant. */
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/**
 * `userId`'s token usage over the last `days` local days (today included; the local day is UTC shifted by
 * `tzOffsetMinutes`), zero-filled, plus the per-model breakdown (each run's tokens under the model it resolved to).
 */
export async function consoleUsage(deps: ConsoleDeps, userId: string, query: { days: number; tzOffsetMinutes: number }, now = new Date()): Promise<ConsoleUsage> {
  const shift = query.tzOffsetMinutes * 60_000;
  const today = Date.parse(`${isoDay(now.getTime() + shift)}T00:00:00Z`);
  const start = today - (query.days - 1) * DAY_MS;
  const buckets = new Map<string, ConsoleUsageDay>();
  for (let i = 0; i < query.days; i++) {
    const date = isoDay(start + i * DAY_MS);
    buckets.set(date, { date, total_tokens: 0, input_tokens: 0, output_tokens: 0, runs: 0, cost: 0 });
  }
  const rows = await deps.runs.usageByOwner(userId, new Date(start - shift).toISOString());
  const pricing = buildPricingMap(deps.models);
  const out: ConsoleUsage = { days: [...buckets.values()], by_model: {}, total_tokens: 0, total_runs: 0, total_cost: pricing.size ? 0 : null, currency: pricingCurrency(pricing) };
  for (const row of rows) {
    const bucket = buckets.get(isoDay(Date.parse(row.created_at) + shift));
    // A row just outside the local window (the UTC window is a superset): skipped, as upstream.
    if (!bucket) continue;
    bucket.total_tokens += row.total_tokens;
    bucket.input_tokens += row.total_input_tokens;
    bucket.output_tokens += row.total_output_tokens;
    bucket.runs += 1;
    out.total_tokens += row.total_tokens;
    out.total_runs += 1;
    const cost = runCost(pricing, row);
    if (cost !== null && out.total_cost !== null) {
      bucket.cost = round6(bucket.cost + cost);
      out.total_cost = round6(out.total_cost + cost);
    }
    // Upstream's rows without a per-model breakdown: the run's tokens go to the model it ran on.
    if (row.model_name && row.total_tokens > 0) {
      const entry = (out.by_model[row.model_name] ??= { tokens: 0, runs: 0, cost: null, input_tokens: 0, cache_read_tokens: 0 });
      entry.tokens += row.total_tokens;
      entry.runs += 1;
      if (cost !== null) entry.cost = round6((entry.cost ?? 0) + cost);
    }
  }
  return out;
}
