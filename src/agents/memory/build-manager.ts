// Port of DeerFlow agents/memory/manager.py's factory: builds the backend `memory.manager_class` names. Apart from
// the contract (manager.ts) because it loads the backends, which import the contract.
import type { AppConfig } from "../../config/schema.js";
import { resolveUse, UseResolutionError } from "../../models/resolve-use.js";
import { BUILT_IN_MANAGERS, type MemoryConfig } from "./memory-config.js";
import { MemoryManagerConfigError, type MemoryManager, type MemoryManagerClass, type MemoryManagerInit } from "./manager.js";

const isManager = (v: unknown): v is MemoryManager =>
  typeof v === "object" && v !== null && ["add", "getContext", "flush", "shutdownFlush", "forget"].every((m) => typeof (v as Record<string, unknown>)[m] === "function");

/**
 * Builds the backend `memory.manager_class` names: `deermem` (the LLM-extracting default), `noop` (stores and
 * injects nothing), or a `module:Export` path (as `use:` in `models`; relative modules resolve against the project
 * root) to a class constructed with {@link MemoryManagerInit}. Fails fast, as upstream: memory is persistent
 * state, so an unresolvable backend is never replaced by another.
 * @throws MemoryManagerConfigError for an unknown name, an unresolvable path, an export that is not a class
 *   producing a MemoryManager, or `mode: tool` with a backend that cannot search.
 */
export async function buildMemoryManager(memory: MemoryConfig, getAppConfig: () => AppConfig, projectRoot = process.cwd(), home?: string): Promise<MemoryManager> {
  const init: MemoryManagerInit = { backendConfig: memory.backend_config, mode: memory.mode, getAppConfig, home };
  let manager: MemoryManager;
  if (memory.manager_class === "deermem") {
    const { DeerMemManager } = await import("./deermem-manager.js");
    const deermem = new DeerMemManager(init);
    await deermem.warmUp().catch(() => undefined); // A table that cannot load leaves the estimate (tokenCounter logs it).
    manager = deermem;
  } else if (memory.manager_class === "noop") {
    const { NoopMemoryManager } = await import("./noop-manager.js");
    manager = new NoopMemoryManager();
  } else {
    let exported: unknown;
    try {
      exported = await resolveUse(memory.manager_class, projectRoot);
    } catch (err) {
      const why = err instanceof UseResolutionError ? err.message : (err as Error).message;
      throw new MemoryManagerConfigError(`memory.manager_class '${memory.manager_class}' is neither a built-in backend (${BUILT_IN_MANAGERS.join(", ")}) nor a resolvable 'module:Export' path: ${why}`, { cause: err });
    }
    if (typeof exported !== "function") throw new MemoryManagerConfigError(`memory.manager_class '${memory.manager_class}' is not a class`);
    try {
      manager = new (exported as MemoryManagerClass)(init);
    } catch (err) {
      throw new MemoryManagerConfigError(`memory.manager_class '${memory.manager_class}' could not be constructed: ${(err as Error).message}`, { cause: err });
    }
    if (!isManager(manager)) throw new MemoryManagerConfigError(`memory.manager_class '${memory.manager_class}' does not implement MemoryManager (add, getContext, flush, shutdownFlush, forget)`);
  }
  if (memory.enabled && memory.mode === "tool" && !(manager.supportsSearch && typeof manager.search === "function")) {
    throw new MemoryManagerConfigError(`memory.mode 'tool' requires a backend that implements search(), but '${manager.name}' does not; use mode 'middleware' or another backend`);
  }
  return manager;
}
