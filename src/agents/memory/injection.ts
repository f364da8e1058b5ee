// Port of DeerMem core/prompt.py `format_memory_for_injection` and `_count_tokens`: the memory text a run sees,
// within a token budget.
import { Tiktoken } from "js-tiktoken/lite";
import { getLogger } from "../../logger.js";
import { coerceConfidence, HISTORY_SECTIONS, USER_SECTIONS, type MemoryDocument, type MemoryFact } from "./memory-document.js";
import { createPieceCounter, estimateTokens, type CountTokens } from "./token-count.js";

export { estimateTokens, type CountTokens };

/** How tokens are counted: `tiktoken` (cl100k_base) or `char` (estimate). */
export type TokenCounting = "tiktoken" | "char";

let encoder: CountTokens | null | undefined;

/**
 * The cl100k_base counter, loaded once (its ranks ship inside js-tiktoken: no download), bounded per piece (see
 * {@link createPieceCounter}). Null when it cannot load.
 */
async function loadEncoder(): Promise<CountTokens | null> {
  if (encoder !== undefined) return encoder;
  try {
    const ranks = (await import("js-tiktoken/ranks/cl100k_base")).default;
    encoder = createPieceCounter(new Tiktoken(ranks), ranks.pat_str);
  } catch (err) {
    getLogger().warn({ err: (err as Error).message }, "tiktoken encoding unavailable; memory budget uses the character estimate");
    encoder = null;
  }
  return encoder;
}

/**
 * A counter for `mode`: tiktoken (its cl100k_base table is loaded on the first call: 300-500 ms of CPU and ~55 MB
 * resident, once per process; pieces over 32 characters are estimated), else the estimate.
 */
export async function tokenCounter(mode: TokenCounting): Promise<CountTokens> {
  return (mode === "tiktoken" ? await loadEncoder() : null) ?? estimateTokens;
}

/** Escapes `<`, `>` and `&`, so stored text cannot close the `<memory>` block it is rendered into. */
export function escapeMemoryText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** `- [category | 0.90] content` (with `(avoid: ...)` for a correction that names its mistake), or null. */
export function formatFactLine(fact: MemoryFact): string | null {
  const content = typeof fact.content === "string" ? fact.content.trim() : "";
  if (!content) return null;
  const category = escapeMemoryText(String(fact.category ?? "context").trim() || "context");
  const line = `- [${category} | ${coerceConfidence(fact.confidence, 0).toFixed(2)}] ${escapeMemoryText(content)}`;
  return category === "correction" && fact.sourceError?.trim() ? `${line} (avoid: ${escapeMemoryText(fact.sourceError.trim())})` : line;
}

/** Options of {@link formatMemoryForInjection}. */
export interface InjectionOptions {
  maxTokens: number;
  /** Token counter; it is always given a limit, so a bounded counter does work in proportion to the budget. */
  count: CountTokens;
  /** Categories injected first, from their own budget. */
  guaranteedCategories?: readonly string[];
  guaranteedTokenBudget?: number;
}

/** Lines taken greedily in rank order until the next one would pass `budget` (a later short line never jumps a skipped one). */
function takeLines(facts: MemoryFact[], budget: number, count: CountTokens): { lines: string[]; used: number } {
  const lines: string[] = [];
  let used = 0;
  for (const fact of facts) {
    const line = formatFactLine(fact);
    if (line === null) continue;
    const cost = count(lines.length ? `\n${line}` : line, budget - used);
    if (used + cost > budget) break;
    lines.push(line);
    used += cost;
  }
  return { lines, used };
}

/** Characters per token of the widest text measured to place the cut of over-budget summaries. */
const PROBE_UNITS_PER_TOKEN = 8;

const byConfidence = (a: MemoryFact, b: MemoryFact) => coerceConfidence(b.confidence, 0) - coerceConfidence(a.confidence, 0);

/**
 * The memory text of a document, as DeerMem formats it: `User Context:` (Work / Personal / Current Focus),
 * `History:` (Recent / Earlier / Background) and `Facts:` (`- [category | confidence] content`, highest confidence
 * first), sections separated by a blank line, every stored string escaped. Budget: facts of the guaranteed
 * categories are chosen first within `guaranteedTokenBudget`; the other facts fill what `maxTokens` leaves after
 * the summaries; if the whole still exceeds `maxTokens` (plus the guaranteed lines' cost), the summaries are cut
 * from their end (marked `...`) and the facts kept. "" when nothing is stored.
 */
export function formatMemoryForInjection(doc: MemoryDocument, options: InjectionOptions): string {
  const { maxTokens, count } = options;
  const sections: string[] = [];
  const labels: Record<string, string> = { workContext: "Work", personalContext: "Personal", topOfMind: "Current Focus", recentMonths: "Recent", earlierContext: "Earlier", longTermBackground: "Background" };
  const userLines = USER_SECTIONS.filter((k) => doc.user[k]?.summary?.trim()).map((k) => `- ${labels[k]}: ${escapeMemoryText(doc.user[k].summary.trim())}`);
  if (userLines.length) sections.push(`User Context:\n${userLines.join("\n")}`);
  const historyLines = HISTORY_SECTIONS.filter((k) => doc.history[k]?.summary?.trim()).map((k) => `- ${labels[k]}: ${escapeMemoryText(doc.history[k].summary.trim())}`);
  if (historyLines.length) sections.push(`History:\n${historyLines.join("\n")}`);

  const header = "Facts:\n";
  let factLines: string[] = [];
  let guaranteedUsed = 0;
  const facts = doc.facts.filter((f) => typeof f.content === "string" && f.content.trim());
  if (facts.length) {
    const guaranteedSet = new Set((options.guaranteedCategories ?? []).map((c) => c.trim()).filter(Boolean));
    const isGuaranteed = (f: MemoryFact) => guaranteedSet.has(String(f.category ?? "").trim());
    const guaranteed = takeLines(facts.filter(isGuaranteed).sort(byConfidence), options.guaranteedTokenBudget ?? 0, count);
    guaranteedUsed = guaranteed.used;
    const base = sections.join("\n\n");
    const used = (base ? count(base, maxTokens) : 0) + count(header) + guaranteed.used + (guaranteed.lines.length ? count("\n") : 0);
    const regular = maxTokens - used > 0 ? takeLines(facts.filter((f) => !isGuaranteed(f)).sort(byConfidence), maxTokens - used, count).lines : [];
    factLines = [...guaranteed.lines, ...regular];
  }
  const factsBlock = factLines.length ? header + factLines.join("\n") : "";
  const all = [...sections, ...(factsBlock ? [factsBlock] : [])];
  if (!all.length) return "";
  let result = all.join("\n\n");
  const limit = maxTokens + guaranteedUsed;
  const total = count(result, limit);
  if (total > limit) {
    // The facts block is a protected suffix; only the summaries before it are cut.
    const preceding = sections.join("\n\n");
    const room = Math.max(0, limit - (factsBlock ? count(factsBlock, limit) + count("\n\n") : 0));
    let head = preceding;
    if (preceding && count(preceding, room) > room) {
      // Characters per token, measured on a prefix a few times the room: the whole text may be far longer.
      const probe = preceding.slice(0, (room + 1) * PROBE_UNITS_PER_TOKEN);
      const perToken = probe.length / Math.max(count(probe), 1);
      head = room > 0 ? `${preceding.slice(0, Math.floor(room * perToken * 0.95)).trimEnd()}\n...` : "";
      // The ratio is an estimate: trim further until the head fits.
      while (head && count(head, room) > room) head = head.length > 8 ? `${head.slice(0, Math.floor(head.length * 0.9)).trimEnd()}\n...` : "";
    }
    result = [head, factsBlock].filter(Boolean).join("\n\n");
  }
  return result;
}
