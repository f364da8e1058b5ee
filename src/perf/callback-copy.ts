// A linear-time metadata copy for @langchain/core's CallbackManager.copy(). Every runnable call copies its parent's
// callback manager; @langchain/core 1.4.0 copies the metadata one key at a time, re-spreading both metadata objects
// and re-listing the inheritable keys per key: O(K²) time and garbage for K keys. A gateway run carries ~25 keys
// (the run's metadata DeerFlow's `_make_lead_agent` records, plus LangGraph's `langgraph_*` and the model's `ls_*`),
// which made the copies 20% of all bytes allocated per run and 3.3% of its CPU (C=64 CPU and allocation profiles).
import { CallbackManager } from "@langchain/core/callbacks/manager";

type Metadata = Record<string, unknown>;
type Copy = (this: CallbackManager, ...args: unknown[]) => CallbackManager;

/** The line of the 1.4.0 copy this replaces; an upstream rewrite drops it, and then nothing is patched. */
const QUADRATIC_MARK = "Object.keys(this.inheritableMetadata).includes(key)";
const EMPTY: Metadata = Object.freeze({}) as Metadata;
const { propertyIsEnumerable } = Object.prototype;

let installed: { original: Copy } | null = null;

/**
 * Makes `CallbackManager.prototype.copy` copy metadata in one pass, with the same result as @langchain/core's own:
 * the copy's `metadata` holds every key of the source's `metadata` (in its order), its `inheritableMetadata` those
 * keys also found in the source's `inheritableMetadata`, with the value from `metadata`; handlers, tags and the
 * added handlers are left to the original method. Installs only over the implementation it was written for (the
 * original's source still has the per-key loop): after an upgrade that rewrites `copy`, it does nothing.
 * Idempotent; for the server process (an embedder's own process keeps the library as it is).
 *
 * @returns Whether the linear copy is in place.
 */
export function installLinearCallbackCopy(): boolean {
  if (installed) return true;
  const proto = CallbackManager.prototype as unknown as { copy: Copy };
  const original = proto.copy;
  if (typeof original !== "function" || !Function.prototype.toString.call(original).includes(QUADRATIC_MARK)) return false;
  proto.copy = function copy(this: CallbackManager, ...args: unknown[]): CallbackManager {
    const metadata = this.metadata as Metadata;
    const inheritable = this.inheritableMetadata as Metadata;
    // The original, with no metadata to copy, does the rest (handlers, tags, added handlers) as before.
    this.metadata = EMPTY;
    this.inheritableMetadata = EMPTY;
    let manager: CallbackManager;
    try {
      manager = original.apply(this, args);
    } finally {
      this.metadata = metadata;
      this.inheritableMetadata = inheritable;
    }
    // Spreads and fromEntries define own data properties, as the original's spreads do (a "__proto__" key stays a
    // key). Usually every key is inheritable, and one spread (V8's fast clone) makes each object.
    const keys = Object.keys(metadata);
    const inherited = keys.filter((key) => propertyIsEnumerable.call(inheritable, key));
    manager.metadata = { ...metadata };
    manager.inheritableMetadata = inherited.length === keys.length ? { ...metadata } : Object.fromEntries(inherited.map((key) => [key, metadata[key]]));
    return manager;
  };
  installed = { original };
  return true;
}

/** Puts @langchain/core's own `copy` back (tests). */
export function uninstallLinearCallbackCopy(): void {
  if (!installed) return;
  (CallbackManager.prototype as unknown as { copy: Copy }).copy = installed.original;
  installed = null;
}
