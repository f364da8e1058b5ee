// Shared base of the class-based middlewares (DeerFlow's AgentMiddleware subclasses).
import type { AgentMiddleware } from "langchain";

const HOOKS = ["beforeAgent", "beforeModel", "afterModel", "afterAgent", "wrapModelCall", "wrapToolCall"] as const;

/**
 * Base class for DeerFlow middlewares written as classes. langchain calls every hook except `wrapModelCall`
 * detached from its object (langchain 1.5 calls them unbound), so the constructor binds each hook to the instance.
 * Subclasses set `name` to the upstream class name (e.g. `"ClarificationMiddleware"`), which is also the
 * middleware's graph-node prefix.
 */
export abstract class DeerflowMiddleware implements AgentMiddleware {
  /** Stable observable name: the upstream class name. */
  abstract readonly name: string;

  constructor() {
    const self = this as unknown as Record<string, unknown>;
    for (const hook of HOOKS) {
      const fn = self[hook];
      if (typeof fn === "function") self[hook] = fn.bind(this);
    }
  }
}

/** True for middleware-shaped objects: a string `name` and at least one hook function. */
export function isMiddleware(value: unknown): value is AgentMiddleware {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === "string" && HOOKS.some((h) => typeof v[h] === "function" || (typeof v[h] === "object" && v[h] !== null));
}
