// Port of DeerFlow agents/factory.py: _assemble_from_features and _insert_extra.
import type { AgentMiddleware } from "langchain";
import { MemoryConfigSchema } from "./memory/memory-config.js";
import { DeerflowError } from "../errors.js";
import { getLogger } from "../logger.js";
import { createAskClarificationTool } from "../tools/builtins/ask-clarification.js";
import { createMemoryTools } from "../tools/builtins/memory-tools.js";
import { createTaskTool } from "../tools/builtins/task.js";
import { createViewImageTool } from "../tools/builtins/view-image.js";
import { getAnchors, RuntimeFeatures, type FeatureFlag, type MiddlewareClass } from "./features.js";
import { isMiddleware } from "./middlewares/base.js";
import { ClarificationMiddleware } from "./middlewares/clarification.js";
import { DanglingToolCallMiddleware } from "./middlewares/dangling-tool-call.js";
import { LoopDetectionMiddleware } from "./middlewares/loop-detection.js";
import { MemoryMiddleware } from "./middlewares/memory.js";
import { SandboxMiddleware } from "./middlewares/sandbox.js";
import { SubagentLimitMiddleware } from "./middlewares/subagent-limit.js";
import { ThreadDataMiddleware } from "./middlewares/thread-data.js";
import { TitleMiddleware } from "./middlewares/title.js";
import { TodoMiddleware } from "./middlewares/todo.js";
import { TokenBudgetMiddleware } from "./middlewares/token-budget.js";
import { ToolErrorHandlingMiddleware } from "./middlewares/tool-error-handling.js";
import { UploadsMiddleware } from "./middlewares/uploads.js";
import { ViewImageMiddleware } from "./middlewares/view-image.js";

/** A feature was switched on whose built-in this release does not include (used by the app layer, e.g. bootstrap). */
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

/** Options of {@link assembleFromFeatures}. */
export interface AssembleOptions {
  /** Adds TodoMiddleware (plan mode). */
  planMode?: boolean;
  /** The agent's name: the built-in memory's bucket (default `"default"`). */
  name?: string;
}

/** `true` selects the built-in, a middleware instance replaces it, `false` skips (DeerFlow checks `is not False`). */
function slot(flag: FeatureFlag, builtIn: () => AgentMiddleware): AgentMiddleware | null {
  if (flag === false) return null;
  return isMiddleware(flag) ? flag : builtIn();
}

/** Built-in memory (the `memory` feature): tool mode gives the memory tools and no middleware, else MemoryMiddleware. */
function builtInMemory(features: RuntimeFeatures, name: string): { middleware: AgentMiddleware | null; tools: NamedTool[] } {
  const config = MemoryConfigSchema.parse(features.memoryConfig ?? {});
  if (config.enabled && config.mode === "tool") {
    const tools: NamedTool[] = [];
    for (const t of createMemoryTools({ agentName: name })) {
      if (tools.some((x) => x.name === t.name)) getLogger().warn(`Memory tool name '${t.name}' already exists and was skipped.`);
      else tools.push(t);
    }
    // The model drives memory in tool mode; the default backend needs no passive writes, so no MemoryMiddleware.
    return { middleware: null, tools };
  }
  if (config.mode === "tool") getLogger().warn("memory.mode is 'tool' but memory is disabled: memory tools will not be registered");
  return { middleware: new MemoryMiddleware({ agentName: name, memoryConfig: features.memoryConfig }), tools: [] };
}

/**
 * Builds the fixed middleware chain from feature flags (DeerFlow `_assemble_from_features`). Order:
 * 1. sandbox group: a middleware instance replaces the whole group; `true` gives ThreadDataMiddleware (lazy
 *    paths), UploadsMiddleware, SandboxMiddleware (lazy acquisition);
 * 2. DanglingToolCallMiddleware (always);
 * 3. [guardrail: a custom instance];
 * 4. ToolErrorHandlingMiddleware (always, no app config);
 * 5. [summarization: a custom instance];
 * 6. [TodoMiddleware when `planMode`, with the short SDK todo prompt];
 * 7. [autoTitle: instance or TitleMiddleware];
 * 8. [memory: instance, or MemoryMiddleware — none in memory tool mode, which adds the memory tools instead];
 * 9. [vision: instance or ViewImageMiddleware];
 * 10. [subagent: instance or SubagentLimitMiddleware (3 per response, 6 per run)];
 * 11. [loopDetection: instance or LoopDetectionMiddleware (3/5/20/100/30/50)];
 * 12. [tokenBudget: instance or TokenBudgetMiddleware with the default, disabled config (inert)];
 * 13. ClarificationMiddleware (always last).
 * Feature tools, in order: memory tools (tool mode), `view_image` (vision and sandbox both on), `task` (subagent
 * on, built-in or custom; it answers with an error while no subagent runtime is plugged in), `ask_clarification`.
 * @throws DeerflowError (`validation_failed`) for `summarization=true` / `guardrail=true` (no built-in exists).
 */
export function assembleFromFeatures(features: RuntimeFeatures, options: AssembleOptions = {}): AssembledChain {
  const name = options.name ?? "default";
  const chain: AgentMiddleware[] = [];
  const add = (m: AgentMiddleware | null) => m && chain.push(m);
  let memoryTools: NamedTool[] = [];

  if (features.sandbox !== false) {
    if (isMiddleware(features.sandbox)) chain.push(features.sandbox);
    else chain.push(new ThreadDataMiddleware({ lazyInit: true }), new UploadsMiddleware(), new SandboxMiddleware({ lazyInit: true }));
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
  if (options.planMode) chain.push(new TodoMiddleware());
  add(slot(features.autoTitle, () => new TitleMiddleware()));
  if (features.memory !== false) {
    if (isMiddleware(features.memory)) chain.push(features.memory);
    else {
      const memory = builtInMemory(features, name);
      add(memory.middleware);
      memoryTools = memory.tools;
    }
  }
  add(slot(features.vision, () => new ViewImageMiddleware()));
  add(slot(features.subagent, () => new SubagentLimitMiddleware()));
  add(slot(features.loopDetection, () => new LoopDetectionMiddleware()));
  add(slot(features.tokenBudget, () => new TokenBudgetMiddleware()));
  chain.push(new ClarificationMiddleware());

  const featureTools: NamedTool[] = [...memoryTools];
  if (features.vision !== false && features.sandbox !== false) featureTools.push(createViewImageTool());
  if (features.subagent !== false) featureTools.push(createTaskTool());
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
