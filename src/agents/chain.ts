// Port of DeerFlow agents/factory.py: _assemble_from_features and _insert_extra.
import type { AgentMiddleware } from "langchain";
import { DeerflowError } from "../errors.js";
import { createAskClarificationTool } from "../tools/builtins/ask-clarification.js";
import { getAnchors, RuntimeFeatures, type FeatureFlag, type MiddlewareClass } from "./features.js";
import { ClarificationMiddleware } from "./middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "./middlewares/dangling-tool-call.js";
import { isMiddleware } from "./middlewares/base.js";
import { LoopDetectionMiddleware } from "./middlewares/loop-detection.js";
import { ThreadDataMiddleware } from "./middlewares/thread-data.js";
import { ToolErrorHandlingMiddleware } from "./middlewares/tool-error-handling.js";

/** A feature was switched on whose built-in middleware this release does not include. */
export class FeatureUnavailableError extends DeerflowError {
  constructor(message: string) {
    super("unsupported", message);
  }
}

/** A tool as the chain needs it: something with a name. */
export interface NamedTool {
  name: string;
}

/** Result of {@link assembleFromFeatures}. */
export interface AssembledChain {
  middleware: AgentMiddleware[];
  /** Tools the enabled features bring (`ask_clarification` always), before de-duplication against user tools. */
  featureTools: NamedTool[];
}

function unavailable(flag: string, builtIn: string): never {
  throw new FeatureUnavailableError(
    `RuntimeFeatures.${flag}=true needs the built-in ${builtIn}, which this release does not include; pass false or your own middleware instance`,
  );
}

/** `true` selects the built-in, a middleware instance replaces it, `false` skips (DeerFlow checks `is not False`). */
function slot(flag: FeatureFlag, builtIn: () => AgentMiddleware): AgentMiddleware | null {
  if (flag === false) return null;
  return isMiddleware(flag) ? flag : builtIn();
}

/**
 * Builds the fixed middleware chain from feature flags (DeerFlow `_assemble_from_features`). Order:
 * 1. sandbox group: a middleware instance replaces the whole group; `true` gives ThreadData(lazy) (Uploads and
 *    Sandbox join the group when they are ported);
 * 2. DanglingToolCallMiddleware (always);
 * 3. [guardrail instance];
 * 4. ToolErrorHandlingMiddleware (always);
 * 5. [summarization instance];
 * 6. [TodoMiddleware when planMode];
 * 7. [autoTitle]; 8. [memory]; 9. [vision]; 10. [subagent];
 * 11. [loopDetection: instance or LoopDetectionMiddleware with default thresholds];
 * 12. [tokenBudget];
 * 13. ClarificationMiddleware (always last).
 * @throws DeerflowError (`validation_failed`) for `summarization=true` / `guardrail=true` (no built-in exists).
 * @throws FeatureUnavailableError for a built-in this release does not ship yet.
 */
export function assembleFromFeatures(features: RuntimeFeatures, options: { planMode?: boolean } = {}): AssembledChain {
  const chain: AgentMiddleware[] = [];
  const featureTools: NamedTool[] = [];
  const add = (m: AgentMiddleware | null) => m && chain.push(m);

  if (features.sandbox !== false) {
    if (isMiddleware(features.sandbox)) chain.push(features.sandbox);
    else chain.push(new ThreadDataMiddleware({ lazyInit: true }));
  }
  chain.push(new DanglingToolCallMiddleware());
  if (features.guardrail !== false) {
    if (!isMiddleware(features.guardrail)) throw new DeerflowError("validation_failed", "guardrail=true requires a custom AgentMiddleware instance (there is no built-in guardrail)");
    chain.push(features.guardrail);
  }
  chain.push(new ToolErrorHandlingMiddleware());
  if (features.summarization !== false) {
    if (!isMiddleware(features.summarization)) {
      throw new DeerflowError("validation_failed", "summarization=true requires a custom AgentMiddleware instance (there is no built-in summarization for the SDK)");
    }
    chain.push(features.summarization);
  }
  if (options.planMode) unavailable("planMode", "TodoMiddleware");
  add(slot(features.autoTitle, () => unavailable("autoTitle", "TitleMiddleware")));
  add(slot(features.memory, () => unavailable("memory", "MemoryMiddleware")));
  add(slot(features.vision, () => unavailable("vision", "ViewImageMiddleware")));
  add(slot(features.subagent, () => unavailable("subagent", "SubagentLimitMiddleware")));
  add(slot(features.loopDetection, () => new LoopDetectionMiddleware()));
  add(slot(features.tokenBudget, () => unavailable("tokenBudget", "TokenBudgetMiddleware")));
  chain.push(new ClarificationMiddleware());
  featureTools.push(createAskClarificationTool());
  return { middleware: chain, featureTools };
}

const nameOf = (m: AgentMiddleware | MiddlewareClass) => (typeof m === "function" ? m.name : m.constructor?.name || m.name);

/**
 * Places extra middlewares into an assembled chain (DeerFlow `_insert_extra`): unanchored extras go just before
 * ClarificationMiddleware in their given order; `@Next(X)` / `@Prev(X)` extras go right after / before the first
 * chain element that is an instance of X, in rounds, so extras can anchor on each other in any order; finally
 * ClarificationMiddleware is moved back to the end if an extra was placed after it.
 * @throws DeerflowError (`validation_failed`) for an extra with both anchors, two extras with the same anchor
 *   (same or opposite direction), circular anchors among extras, or an anchor not found in the chain.
 */
export function insertExtra(chain: AgentMiddleware[], extras: AgentMiddleware[]): AgentMiddleware[] {
  const out = [...chain];
  const fail = (message: string): never => {
    throw new DeerflowError("validation_failed", message);
  };
  const nextBy = new Map<MiddlewareClass, AgentMiddleware>();
  const prevBy = new Map<MiddlewareClass, AgentMiddleware>();
  const anchored: { mw: AgentMiddleware; anchor: MiddlewareClass; dir: "next" | "prev" }[] = [];
  const unanchored: AgentMiddleware[] = [];
  for (const mw of extras) {
    const { next, prev } = getAnchors(mw);
    if (next && prev) fail(`${nameOf(mw)} cannot have both @Next and @Prev`);
    if (next) {
      if (nextBy.has(next)) fail(`Conflict: ${nameOf(nextBy.get(next)!)} and ${nameOf(mw)} both @Next(${next.name})`);
      if (prevBy.has(next)) fail(`Conflict: ${nameOf(prevBy.get(next)!)} is @Prev(${next.name}) and ${nameOf(mw)} is @Next(${next.name}) — use cross-anchoring between extras instead`);
      nextBy.set(next, mw);
      anchored.push({ mw, anchor: next, dir: "next" });
    } else if (prev) {
      if (prevBy.has(prev)) fail(`Conflict: ${nameOf(prevBy.get(prev)!)} and ${nameOf(mw)} both @Prev(${prev.name})`);
      if (nextBy.has(prev)) fail(`Conflict: ${nameOf(nextBy.get(prev)!)} is @Next(${prev.name}) and ${nameOf(mw)} is @Prev(${prev.name}) — use cross-anchoring between extras instead`);
      prevBy.set(prev, mw);
      anchored.push({ mw, anchor: prev, dir: "prev" });
    } else unanchored.push(mw);
  }
  const clarIdx = () => out.findIndex((m) => m instanceof ClarificationMiddleware);
  for (const mw of unanchored) {
    const idx = clarIdx();
    out.splice(idx === -1 ? out.length : idx, 0, mw);
  }
  let pending = anchored;
  for (let round = 0; pending.length && round <= anchored.length; round++) {
    const still: typeof pending = [];
    for (const item of pending) {
      const idx = out.findIndex((m) => m instanceof (item.anchor as unknown as new () => AgentMiddleware));
      if (idx === -1) still.push(item);
      else out.splice(item.dir === "next" ? idx + 1 : idx, 0, item.mw);
    }
    if (still.length === pending.length) {
      const pendingClasses = new Set(still.map((p) => p.mw.constructor));
      if (still.some((p) => pendingClasses.has(p.anchor))) {
        fail(`Circular dependency among extra middlewares: ${still.map((p) => `${nameOf(p.mw)} -> ${p.anchor.name}`).join(", ")}`);
      }
      fail(`Cannot resolve positions for ${still.map((p) => nameOf(p.mw)).join(", ")} — anchors ${still.map((p) => p.anchor.name).join(", ")} not found in chain`);
    }
    pending = still;
  }
  const idx = clarIdx();
  if (idx !== -1 && idx !== out.length - 1) out.push(...out.splice(idx, 1));
  return out;
}
