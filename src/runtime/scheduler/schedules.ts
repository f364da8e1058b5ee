// When a scheduled task fires (DeerFlow deerflow/scheduler/schedules.py): a 5-field cron in the task's IANA time
// zone, or one ISO time. Cron arithmetic is croner's (DST-correct: a wall-clock time is resolved in the zone for the
// day in question); this file only validates and converts.
import { Cron } from "croner";
import { ValidationError } from "../../errors.js";

/** A task's schedule kind: upstream's `schedule_type`. */
export type ScheduleType = "once" | "cron";

/** A 422 `{detail: "<message>"}` for a bad schedule (upstream raises ValueError, answered 422 with its text). */
export class ScheduleError extends ValidationError {}

/**
 * Checks an IANA time zone name (`Europe/Berlin`, `UTC`).
 * @returns The name unchanged. @throws ScheduleError "Unknown timezone: <name>" for a zone the runtime lacks.
 */
export function validateTimezone(name: string): string {
  try {
    if (!name) throw new RangeError("empty");
    new Intl.DateTimeFormat("en-US", { timeZone: name });
  } catch {
    throw new ScheduleError(`Unknown timezone: ${name}`);
  }
  return name;
}

/**
 * Upstream's `normalize_cron_expression`: exactly 5 whitespace-separated fields (minute hour day month weekday),
 * rejoined with single spaces; then each field is checked by croner.
 * @throws ScheduleError for 6/7-field (seconds, years) or shorter expressions, and for out-of-range values.
 */
export function normalizeCron(expr: string): string {
  const parts = expr.split(/\s+/).filter(Boolean);
  if (parts.length !== 5) throw new ScheduleError("Cron expression must contain exactly 5 fields");
  const normalized = parts.join(" ");
  try {
    new Cron(normalized, { paused: true }).stop();
  } catch (err) {
    throw new ScheduleError(`Invalid cron expression: ${(err as Error).message.replace(/^CronPattern: /, "")}`);
  }
  return normalized;
}

/** `fromisoformat`'s shapes: a date, then optionally a time with seconds, fraction and an offset (or `Z`). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * The instant of a one-shot's `run_at`: with an offset (or `Z`) as written; without one, a wall-clock time in
 * `timezone` (upstream: "a naive run_at means wall-clock time in the task's declared timezone").
 * @throws ScheduleError for a value that is not an ISO 8601 date-time.
 */
export function parseRunAt(runAt: string, timezone: string): Date {
  const m = ISO_TIME.exec(runAt.trim());
  const text = runAt.trim().replace(" ", "T");
  let at: Date | null = null;
  if (m && m[1]) at = new Date(Date.parse(text));
  else if (m) at = new Cron(text.length === 10 ? `${text}T00:00:00` : text.replace(/\.\d+$/, ""), { timezone, paused: true }).nextRun(new Date(0));
  if (!at || Number.isNaN(at.getTime())) throw new ScheduleError(`Invalid isoformat string: '${runAt}'`);
  return at;
}

/**
 * Upstream's `next_run_at`: the next firing strictly after `now` (UTC instant), or null for a one-shot whose time
 * has passed. `spec` is the task's `schedule_spec` (`{cron}` or `{run_at}`).
 * @throws ScheduleError for a bad zone, a bad or missing cron / run_at, or an unknown schedule type.
 */
export function nextRunAt(type: string, spec: Record<string, unknown>, timezone: string, now: Date): Date | null {
  validateTimezone(timezone);
  if (type === "once") {
    if (typeof spec.run_at !== "string") throw new ScheduleError("once schedule requires run_at");
    const at = parseRunAt(spec.run_at, timezone);
    return at.getTime() > now.getTime() ? at : null;
  }
  if (type === "cron") {
    const cron = new Cron(normalizeCron(String(spec.cron ?? "")), { timezone, paused: true });
    return cron.nextRun(now);
  }
  throw new ScheduleError(`Unsupported schedule_type: ${type}`);
}

/**
 * The shortest gap, in seconds, between consecutive firings of `cron` in `timezone` over its next `samples`
 * firings from `now` (enough to meet any minute/hour pattern; a day-of-month pattern that is denser only in a later
 * month is the one a sample can miss).
 */
export function shortestCronGapSeconds(cron: string, timezone: string, now: Date, samples = 120): number {
  const runs = new Cron(cron, { timezone, paused: true }).nextRuns(samples, now);
  let gap = Infinity;
  for (let i = 1; i < runs.length; i++) gap = Math.min(gap, (runs[i].getTime() - runs[i - 1].getTime()) / 1000);
  return gap;
}
