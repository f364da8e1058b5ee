// The `scheduler` section (DeerFlow config/scheduler_config.py), zod only: upstream's keys and bounds, plus the
// gateway's two per-user limits (`max_tasks_per_user`, `min_interval_seconds`), which upstream does not have.
import { z } from "zod";

/**
 * `scheduler`: the scheduled-task poller (docs/scheduled-tasks.md). Restart-only, as upstream.
 * - `enabled` (false): starts the poller; the routes answer either way (upstream: a task can be created and
 *   triggered by hand with the poller off).
 * - `multi_instance` (false): several processes share the database; the start-up sweep then finalises only task runs
 *   whose run is no longer live instead of all of them.
 * - `poll_interval_seconds` (5, 1..300): how often each process claims due tasks.
 * - `lease_seconds` (120, 5..3600): a claim's lease; a task claimed by a process that died is reclaimable after it.
 * - `max_concurrent_runs` (3, 1..32): active scheduled runs at once, across every process sharing the database.
 * - `min_once_delay_seconds` (60, 1..86400): how far in the future a one-shot must be when created or rescheduled.
 * - `max_tasks_per_user` (100, 1..10000): tasks one user may hold (gateway limit; a create beyond it is a 422).
 * - `min_interval_seconds` (60, 60..86400): the shortest gap between two firings a cron may have (gateway limit; a
 *   5-field cron fires at most every 60 s, so the default admits `* * * * *`).
 */
export const SchedulerConfigSchema = z.object({
  enabled: z.boolean().default(false),
  multi_instance: z.boolean().default(false),
  poll_interval_seconds: z.number().int().min(1).max(300).default(5),
  lease_seconds: z.number().int().min(5).max(3600).default(120),
  max_concurrent_runs: z.number().int().min(1).max(32).default(3),
  min_once_delay_seconds: z.number().int().min(1).max(86400).default(60),
  max_tasks_per_user: z.number().int().min(1).max(10000).default(100),
  min_interval_seconds: z.number().int().min(60).max(86400).default(60),
});
/** A validated `scheduler` section. */
export type SchedulerConfig = z.infer<typeof SchedulerConfigSchema>;
