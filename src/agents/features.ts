// Port of DeerFlow agents/features.py: RuntimeFeatures and the @Next / @Prev anchoring decorators.
import type { AgentMiddleware } from "langchain";
import { DeerflowMiddleware } from "./middlewares/base.js";

/** A feature flag: `false` skips the slot, `true` installs the built-in, a middleware instance replaces it. */
export type FeatureFlag = boolean | AgentMiddleware;

/** Constructor input of {@link RuntimeFeatures}; omitted flags take their defaults. */
export interface RuntimeFeaturesInit {
  sandbox?: FeatureFlag;
  memory?: FeatureFlag;
  memoryConfig?: Record<string, unknown> | null;
  summarization?: false | AgentMiddleware;
  subagent?: FeatureFlag;
  vision?: FeatureFlag;
  autoTitle?: FeatureFlag;
  guardrail?: false | AgentMiddleware;
  loopDetection?: FeatureFlag;
  tokenBudget?: FeatureFlag;
}

/**
 * Which optional middleware slots `createDeerflowAgent` fills (DeerFlow `RuntimeFeatures`). Defaults: `sandbox`
 * and `loopDetection` on, everything else off. `summarization` and `guardrail` have no built-in: they take
 * `false` or a middleware instance, and `true` is rejected when the chain is assembled.
 * @example
 * ```ts
 * // Everything on except memory; a custom summarization middleware instead of the default one.
 * const features = new RuntimeFeatures({ memory: false, summarization: new MySummarization() });
 * const agent = createDeerflowAgent(model, tools, { features, planMode: true });
 * ```
 */
export class RuntimeFeatures {
  sandbox: FeatureFlag;
  memory: FeatureFlag;
  /** Memory settings for the built-in MemoryMiddleware (null: the global memory config). */
  memoryConfig: Record<string, unknown> | null;
  summarization: FeatureFlag;
  subagent: FeatureFlag;
  vision: FeatureFlag;
  autoTitle: FeatureFlag;
  guardrail: FeatureFlag;
  loopDetection: FeatureFlag;
  tokenBudget: FeatureFlag;

  constructor(init: RuntimeFeaturesInit = {}) {
    this.sandbox = init.sandbox ?? true;
    this.memory = init.memory ?? false;
    this.memoryConfig = init.memoryConfig ?? null;
    this.summarization = init.summarization ?? false;
    this.subagent = init.subagent ?? false;
    this.vision = init.vision ?? false;
    this.autoTitle = init.autoTitle ?? false;
    this.guardrail = init.guardrail ?? false;
    this.loopDetection = init.loopDetection ?? true;
    this.tokenBudget = init.tokenBudget ?? false;
  }
}

/** A middleware class usable as an anchor. */
export type MiddlewareClass = abstract new (...args: never[]) => AgentMiddleware;

/** Anchors recorded on a decorated class. */
export interface Anchors {
  next?: MiddlewareClass;
  prev?: MiddlewareClass;
}

const anchors = new WeakMap<object, Anchors>();

function assertMiddlewareClass(anchor: unknown, decorator: string): asserts anchor is MiddlewareClass {
  const ok = typeof anchor === "function" && (anchor === DeerflowMiddleware || anchor.prototype instanceof DeerflowMiddleware);
  if (!ok) {
    const got = typeof anchor === "function" ? anchor.name || "anonymous function" : anchor === null ? "null" : typeof anchor;
    throw new TypeError(`@${decorator} anchor must be an AgentMiddleware subclass (a class extending DeerflowMiddleware), got ${got}`);
  }
}

function record(kind: keyof Anchors, anchor: MiddlewareClass) {
  return (target: object, _context?: ClassDecoratorContext) => {
    anchors.set(target, { ...anchors.get(target), [kind]: anchor });
  };
}

/**
 * Class decorator: place the decorated extra middleware right **after** the first chain element that is an
 * instance of `anchor`. Mirrors DeerFlow `@Next`.
 * @throws TypeError at decoration time when `anchor` is not a middleware class.
 * @example
 * ```ts
 * @Next(ClarificationMiddleware)
 * class AuditMiddleware extends DeerflowMiddleware { readonly name = "Audit"; }
 * createDeerflowAgent(model, tools, { extraMiddleware: [new AuditMiddleware()] }); // placed right after Clarification
 * ```
 */
export function Next(anchor: MiddlewareClass) {
  assertMiddlewareClass(anchor, "Next");
  return record("next", anchor);
}

/**
 * Class decorator: place the decorated extra middleware right **before** the first chain element that is an
 * instance of `anchor`. Mirrors DeerFlow `@Prev`.
 * @throws TypeError at decoration time when `anchor` is not a middleware class.
 * @example
 * ```ts
 * @Prev(ClarificationMiddleware)
 * class GuardMiddleware extends DeerflowMiddleware { readonly name = "Guard"; }
 * ```
 */
export function Prev(anchor: MiddlewareClass) {
  assertMiddlewareClass(anchor, "Prev");
  return record("prev", anchor);
}

/**
 * The anchors of a middleware instance's class. Like DeerFlow's `getattr(type(mw), "_next_anchor")`, an anchor is
 * inherited: each of `next` / `prev` comes from the nearest class in the inheritance chain that declares it.
 */
export function getAnchors(middleware: AgentMiddleware): Anchors {
  const out: Anchors = {};
  for (let ctor: unknown = (middleware as object).constructor; typeof ctor === "function"; ctor = Object.getPrototypeOf(ctor)) {
    const own = anchors.get(ctor);
    if (own?.next && !out.next) out.next = own.next;
    if (own?.prev && !out.prev) out.prev = own.prev;
  }
  return out;
}
