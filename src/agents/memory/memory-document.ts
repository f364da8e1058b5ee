// The structured memory of one (user, agent): DeerMem's document shape (user context, history, facts with
// category and confidence), which the web app's memory routes read and write as is.
import { randomUUID } from "node:crypto";

/** Most UTF-16 units of a stored summary (what `POST /api/memory/import` accepts; extraction is cut to it too). */
export const MAX_SUMMARY_CHARS = 100_000;
/** Most UTF-16 units of a stored fact's content or `sourceError` (import, the fact routes and extraction alike). */
export const MAX_FACT_CHARS = 10_000;

/** `text` cut to at most `max` UTF-16 units, never inside a surrogate pair. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** One summary section (`workContext`, `recentMonths`...). `updatedAt` ISO-8601 or "". */
export interface MemorySection {
  summary: string;
  updatedAt: string;
}

/** One remembered fact. `confidence` 0..1; `createdAt` ISO-8601; `source` the thread id it came from, or `manual`. */
export interface MemoryFact {
  id: string;
  content: string;
  category: string;
  confidence: number;
  createdAt: string;
  source: string;
  /** For `correction` facts: the mistake to avoid (DeerMem `sourceError`). */
  sourceError?: string;
}

/** The memory document (DeerFlow `MemoryResponse`). */
export interface MemoryDocument {
  version: string;
  /**
   * The document's optimistic revision (DeerMem's manifest revision): 0 before the first write, +1 on every write
   * (FileMemoryStore.save). Absent on documents not read from a store.
   */
  revision?: number;
  lastUpdated: string;
  user: { workContext: MemorySection; personalContext: MemorySection; topOfMind: MemorySection };
  history: { recentMonths: MemorySection; earlierContext: MemorySection; longTermBackground: MemorySection };
  facts: MemoryFact[];
}

/** Names of the user-context sections, in injection order. */
export const USER_SECTIONS = ["workContext", "personalContext", "topOfMind"] as const;
/** Names of the history sections, in injection order. */
export const HISTORY_SECTIONS = ["recentMonths", "earlierContext", "longTermBackground"] as const;

const section = (): MemorySection => ({ summary: "", updatedAt: "" });

/** An empty memory document. */
export function emptyMemory(): MemoryDocument {
  return {
    version: "2",
    lastUpdated: "",
    user: { workContext: section(), personalContext: section(), topOfMind: section() },
    history: { recentMonths: section(), earlierContext: section(), longTermBackground: section() },
    facts: [],
  };
}

/** Thrown by {@link normalizeMemory} for a value that is not a memory document at all. */
export class MalformedMemoryError extends Error {}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown, fallback = ""): string => (typeof v === "string" ? v : fallback);

function sectionOf(v: unknown): MemorySection {
  return isObject(v) ? { summary: str(v.summary), updatedAt: str(v.updatedAt) } : section();
}

/** Clamps a confidence-like value into 0..1 (non-numbers and NaN give `fallback`), as DeerMem `_coerce_confidence`. */
export function coerceConfidence(value: unknown, fallback = 0.5): number {
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : NaN;
  return Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : fallback;
}

/**
 * A stored value as a memory document: missing sections are filled in, facts without text are dropped, and this
 * gateway's earlier format (`version: 1`, `facts[].created_at`, `profile: {user, history}`, per-thread digests)
 * is read as the new one (digests are dropped: the extracted history replaces them).
 * @throws MalformedMemoryError when `raw` is not an object or its `facts` is present but not an array.
 */
export function normalizeMemory(raw: unknown): MemoryDocument {
  if (!isObject(raw)) throw new MalformedMemoryError("memory file is not a JSON object");
  if (raw.facts !== undefined && !Array.isArray(raw.facts)) throw new MalformedMemoryError("memory file 'facts' is not a list");
  const doc = emptyMemory();
  const profile = isObject(raw.profile) ? raw.profile : raw;
  const user = isObject(profile.user) ? profile.user : {};
  const history = isObject(profile.history) ? profile.history : {};
  for (const k of USER_SECTIONS) doc.user[k] = sectionOf(user[k]);
  for (const k of HISTORY_SECTIONS) doc.history[k] = sectionOf(history[k]);
  doc.lastUpdated = str(raw.lastUpdated, str(raw.updated_at));
  // Files written before revisions existed read as revision 0; their next write is revision 1.
  doc.revision = typeof raw.revision === "number" && Number.isSafeInteger(raw.revision) && raw.revision >= 0 ? raw.revision : 0;
  for (const f of (raw.facts as unknown[] | undefined) ?? []) {
    if (!isObject(f) || typeof f.content !== "string" || !f.content.trim()) continue;
    const fact: MemoryFact = {
      id: str(f.id) || newFactId(),
      content: f.content,
      category: str(f.category).trim() || "context",
      confidence: coerceConfidence(f.confidence),
      createdAt: str(f.createdAt, str(f.created_at)),
      source: str(f.source, "unknown"),
    };
    if (typeof f.sourceError === "string" && f.sourceError.trim()) fact.sourceError = f.sourceError;
    doc.facts.push(fact);
  }
  return doc;
}

/** A new fact id: `fact_` and 12 hex digits. */
export function newFactId(): string {
  return `fact_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
}

/** Case- and space-insensitive identity of a fact's text (DeerMem `_fact_content_key`): duplicates are not stored twice. */
export function factKey(content: string): string {
  return content.trim().replace(/\s+/g, " ").toLowerCase();
}
