// Port of DeerFlow agents/thread_state.py: the reducers of the newer channels (goal, promoted, delegations,
// skill_context). thread-state.ts re-exports everything here.
import { z } from "zod";

/** A goal record (`goal` channel); opaque to the gateway. */
export type Goal = Record<string, unknown>;

/**
 * Merges goals. Mirrors DeerFlow `merge_goal`: like todos, null keeps and any value replaces. A goal whose `status` is
 * `cleared` empties the channel: upstream removes the goal from the checkpoint, which a null write cannot do here.
 */
export function mergeGoal(current: Goal | null | undefined, next: Goal | null | undefined): Goal | null {
  if (next?.status === "cleared") return null;
  return next == null ? (current ?? null) : next;
}

/** Deferred tools promoted by `tool_search` under one tool-catalog hash. */
export const PromotedSchema = z.object({ catalog_hash: z.string(), names: z.array(z.string()) });
/** `{catalog_hash, names}` of promoted deferred tools. */
export type Promoted = z.infer<typeof PromotedSchema>;

/**
 * Merges promotions. Mirrors DeerFlow `merge_promoted`: an empty update (null or no names) keeps the current
 * value; no current value or a different catalog hash replaces (names de-duplicated); the same hash gives the
 * ordered union of names.
 */
export function mergePromoted(current: Promoted | null | undefined, next: Promoted | null | undefined): Promoted | null {
  if (next == null || next.names.length === 0) return current ?? null;
  if (current == null || current.catalog_hash !== next.catalog_hash) return { catalog_hash: next.catalog_hash, names: [...new Set(next.names)] };
  return { catalog_hash: current.catalog_hash, names: [...new Set([...current.names, ...next.names])] };
}

/** A subagent delegation (`task` call) record. */
export const DelegationSchema = z.looseObject({
  id: z.string(),
  status: z.string().optional(),
  created_at: z.union([z.string(), z.number()]).optional(),
  run_id: z.string().nullable().optional(),
});
/** One delegation entry; extra keys are kept. */
export type Delegation = z.infer<typeof DelegationSchema>;

/** Statuses a delegation never leaves once reached. */
export const TERMINAL_DELEGATION_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled", "timed_out", "polling_timed_out"]);
/** Most delegations kept per thread (the newest win). */
export const MAX_DELEGATIONS = 50;

/**
 * Merges delegation lists by `id`, first-seen order. Mirrors DeerFlow `merge_delegations`: the latest version of
 * an entry wins, except that a terminal status (completed, failed, cancelled, timed_out, polling_timed_out) is
 * never replaced by a non-terminal one; the first `created_at` and an existing `run_id` are kept. At most 50
 * entries are kept (the oldest are dropped).
 */
export function mergeDelegations(current: Delegation[] | null | undefined, next: Delegation[] | null | undefined): Delegation[] {
  const merged = new Map<string, Delegation>();
  for (const d of current ?? []) merged.set(d.id, d);
  for (const d of next ?? []) {
    const old = merged.get(d.id);
    if (!old) {
      merged.set(d.id, d);
      continue;
    }
    if (TERMINAL_DELEGATION_STATUSES.has(String(old.status)) && !TERMINAL_DELEGATION_STATUSES.has(String(d.status))) continue;
    merged.set(d.id, {
      ...d,
      ...(old.created_at !== undefined ? { created_at: old.created_at } : {}),
      ...(old.run_id ? { run_id: old.run_id } : {}),
    });
  }
  const out = [...merged.values()];
  return out.length > MAX_DELEGATIONS ? out.slice(out.length - MAX_DELEGATIONS) : out;
}

/** A skill file the agent has read, remembered so later turns can refer to it. */
export const SkillContextEntrySchema = z.object({ name: z.string(), path: z.string(), description: z.string(), loaded_at: z.number() });
/** One normalized skill-context entry. */
export type SkillContextEntry = z.infer<typeof SkillContextEntrySchema>;
/** Most skill-context entries kept (the newest win). */
export const MAX_SKILL_CONTEXT = 8;
const MAX_SKILL_DESCRIPTION = 500;

/**
 * One skill-context entry in canonical form: `{name, path, description, loaded_at}` only (extra keys such as a
 * legacy `content` are dropped), description whitespace-collapsed and cut to 500 chars, `loaded_at` an integer
 * (else 0).
 */
export function normalizeSkillContextEntry(entry: Record<string, unknown>): SkillContextEntry {
  const loaded = entry.loaded_at;
  return {
    name: String(entry.name ?? ""),
    path: String(entry.path ?? entry.name ?? ""),
    description: String(entry.description ?? "").replace(/\s+/g, " ").trim().slice(0, MAX_SKILL_DESCRIPTION),
    loaded_at: typeof loaded === "number" && Number.isInteger(loaded) ? loaded : 0,
  };
}

/**
 * Merges skill-context lists. Mirrors DeerFlow `merge_skill_context`: entries are normalized, de-duplicated by
 * path (a re-read entry replaces the old one and moves to the end), and at most 8 are kept (the newest).
 */
export function mergeSkillContext(
  current: Record<string, unknown>[] | null | undefined,
  next: Record<string, unknown>[] | null | undefined,
): SkillContextEntry[] {
  const merged = new Map<string, SkillContextEntry>();
  for (const raw of [...(current ?? []), ...(next ?? [])]) {
    const entry = normalizeSkillContextEntry(raw);
    merged.delete(entry.path);
    merged.set(entry.path, entry);
  }
  const out = [...merged.values()];
  return out.length > MAX_SKILL_CONTEXT ? out.slice(out.length - MAX_SKILL_CONTEXT) : out;
}
