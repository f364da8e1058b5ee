// A cheaper scope for @langchain/core's runWithConfig when nothing is traced. Every graph node, router and channel
// write runs inside `AsyncLocalStorageProviderSingleton.runWithConfig`, which @langchain/core 1.4.0 implements by
// configuring a whole callback manager (to look for a LangSmith tracer) and, when it finds none, by constructing a
// langsmith `RunTree` (ids, dotted order, a date string, a dozen environment reads) only to carry the config in
// async-local storage. With tracing off both are thrown away: 7% of the server's CPU at C=64 (4.1% the RunTree, 2.7%
// the callback manager; a gateway run enters ~20 such scopes).
import { createRequire } from "node:module";
import path from "node:path";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import { RunTree } from "langsmith/run_trees";

type Store = Record<PropertyKey, unknown>;
type RunWithConfig = (this: Pick<Provider, "getInstance">, config: unknown, callback: () => unknown, avoidCreatingRootRunTree?: boolean) => unknown;
interface Storage {
  getStore(): unknown;
  run(store: unknown, callback: () => unknown): unknown;
}
interface Provider {
  runWithConfig: RunWithConfig;
  getInstance(): Storage;
}

/** Where @langchain/core keeps the config in the scope's store (`extra[LC_CHILD_KEY]`), and its context variables. */
const LC_CHILD_KEY = Symbol.for("lc:child_config");
const CONTEXT_VARIABLES_KEY = Symbol.for("lc:context_variables");
/**
 * Lines of the 1.4.0 implementation this replaces (the tracer lookup, the placeholder it builds, where the config
 * goes); an upstream rewrite drops one, and nothing is patched.
 */
const SOURCE_MARKS = ["getRunTreeWithTracingConfig(parentRunId)", 'name: "<runnable_lambda>"', "tracingEnabled: false", "[LC_CHILD_KEY]: config"];
const PLACEHOLDER_NAME = "<runnable_lambda>";
/** @langchain/core's `isTracingEnabled()` environment variables (any one set to "true" adds a LangSmith tracer). */
const TRACING_ENV = ["LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_TRACING"] as const;
/** The own properties a placeholder holds from the start; everything else of a RunTree is made on first use. */
const EAGER = new Set<PropertyKey>(["name", "tracingEnabled", "extra"]);
/** Set on a placeholder once its RunTree fields are built. */
const MATERIALIZED = Symbol("deerflow.runTreeMaterialized");
/** Stands in for langsmith's client in the RunTree built to list the fields: no shared client is made for it. */
const NO_CLIENT = Object.freeze({});

let installed: { original: RunWithConfig; provider: Provider } | null = null;

/**
 * Whether `runWithConfig` could find a LangSmith tracer for this config: then the original does the work. Mirrors
 * `CallbackManager._configureSync`: under an enclosing RunTree whose `tracingEnabled` is false (every scope nested in
 * a graph run: the placeholders have it false) inherited tracers are dropped and the environment is not consulted,
 * so nothing can trace; a truthy flag (a tracing `traceable`) adds a tracer; with no flag the LangSmith environment
 * switches decide; and a `langchain_tracer` among the config's callbacks is kept unless the flag is false.
 */
function mayTrace(config: unknown, current: unknown): boolean {
  const flag = current !== null && typeof current === "object" ? (current as Store).tracingEnabled : undefined;
  if (flag === false) return false;
  if (flag) return true;
  if (flag === undefined || flag === null) for (const name of TRACING_ENV) if (process.env[name] === "true") return true;
  const callbacks = (config as { callbacks?: unknown } | null | undefined)?.callbacks;
  const handlers = Array.isArray(callbacks) ? callbacks : (callbacks as { handlers?: unknown } | undefined)?.handlers;
  return Array.isArray(handlers) && handlers.some((h) => (h as { name?: unknown } | null)?.name === "langchain_tracer");
}

/**
 * A prototype for placeholders that behave as the RunTree @langchain/core would have stored: `extra` (which holds the
 * config), `name` and `tracingEnabled` are their own from the start, and the first read or write of anything else
 * of a RunTree (its id, dotted order, client..., or a method such as `createChild`, which langsmith's `isRunTree`
 * probes) first builds the real RunTree's fields onto the placeholder. So `getRunnableConfig()` costs nothing more,
 * and a langsmith `traceable` or `setContextVariable` inside the scope sees a complete RunTree. Differences left, by
 * design: before that first use the placeholder's own keys are only those three (a spread or `Object.keys` of the
 * store sees them), and its `start_time` and id are those of the first use, not of the scope's start.
 */
function lazyRunTreePrototype(): object {
  const proto = Object.create(RunTree.prototype) as object;
  /** The placeholder `target` is, or derives from (an object created with the placeholder as its prototype). */
  const ownerOf = (target: object): Store | null => {
    let owner: object | null = target;
    while (owner !== null && Object.getPrototypeOf(owner) !== proto) owner = Object.getPrototypeOf(owner) as object | null;
    return owner as Store | null;
  };
  const materialize = (owner: Store): void => {
    if (owner[MATERIALIZED]) return;
    Object.defineProperty(owner, MATERIALIZED, { value: true });
    const real = new RunTree({ name: PLACEHOLDER_NAME, tracingEnabled: false }) as unknown as Store;
    for (const key of Reflect.ownKeys(real)) {
      if (!EAGER.has(key)) Object.defineProperty(owner, key, Object.getOwnPropertyDescriptor(real, key)!);
    }
  };
  // The fields a RunTree defines, listed from one built with a stand-in client (no shared client is created).
  const sample = new RunTree({ name: PLACEHOLDER_NAME, tracingEnabled: false, client: NO_CLIENT as never }) as unknown as Store;
  for (const key of Reflect.ownKeys(sample)) {
    if (EAGER.has(key)) continue;
    Object.defineProperty(proto, key, {
      configurable: true,
      get(this: Store) {
        const owner = ownerOf(this);
        if (owner === null) return undefined;
        materialize(owner);
        return this[key];
      },
      set(this: Store, value: unknown) {
        const owner = ownerOf(this);
        if (owner === null) return;
        materialize(owner);
        this[key] = value;
      },
    });
  }
  for (const key of Reflect.ownKeys(RunTree.prototype)) {
    const descriptor = Object.getOwnPropertyDescriptor(RunTree.prototype, key)!;
    if (key === "constructor" || typeof descriptor.value !== "function") continue;
    const method = descriptor.value as unknown;
    Object.defineProperty(proto, key, {
      configurable: true,
      get(this: Store) {
        const owner = ownerOf(this);
        if (owner !== null) materialize(owner);
        return method;
      },
    });
  }
  return proto;
}

/** Whether @langchain/core resolves the same langsmith package as this module (so its RunTree is ours). */
function sameLangsmith(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const fromCore = createRequire(require.resolve("@langchain/core/singletons")).resolve("langsmith");
    return path.dirname(fromCore) === path.dirname(require.resolve("langsmith"));
  } catch {
    return false;
  }
}

/**
 * Makes `AsyncLocalStorageProviderSingleton.runWithConfig` skip its tracer lookup and RunTree construction when no
 * tracer can be involved (see {@link mayTrace}: inside a graph run, or else no LangSmith tracing variable "true", no
 * tracing `traceable` around and no `langchain_tracer` among the config's callbacks) and the enclosing scope sets no
 * context variables (which may register configure hooks). The scope then stores a placeholder that reads as the
 * RunTree the original would have stored (see {@link lazyRunTreePrototype}); in every other case the original runs. Installs only over the
 * implementation it was written for (1.4.0's source, with @langchain/core resolving the same langsmith package):
 * after an upgrade that rewrites it, it does nothing. Installing has no side effect on LangSmith (no client is made,
 * no environment variable read is kept). Idempotent; for the server process.
 *
 * @returns Whether the lean scope is in place.
 */
export function installLeanRunnableScope(): boolean {
  if (installed) return true;
  const provider = AsyncLocalStorageProviderSingleton as unknown as Provider;
  const original = provider.runWithConfig;
  if (typeof original !== "function") return false;
  const source = Function.prototype.toString.call(original);
  if (!SOURCE_MARKS.every((mark) => source.includes(mark)) || !sameLangsmith()) return false;
  const proto = lazyRunTreePrototype();
  provider.runWithConfig = function runWithConfig(this: Pick<Provider, "getInstance">, config, callback, avoidCreatingRootRunTree) {
    const storage = this.getInstance();
    const current = storage.getStore();
    if ((current as Store | undefined)?.[CONTEXT_VARIABLES_KEY] !== undefined || mayTrace(config, current)) {
      return original.call(this, config, callback, avoidCreatingRootRunTree);
    }
    if (avoidCreatingRootRunTree) return storage.run(undefined, callback);
    const store = Object.create(proto) as Store;
    store.name = PLACEHOLDER_NAME;
    store.tracingEnabled = false;
    store.extra = { metadata: {}, [LC_CHILD_KEY]: config };
    return storage.run(store, callback);
  };
  installed = { original, provider };
  return true;
}

/** Puts @langchain/core's own `runWithConfig` back (tests). */
export function uninstallLeanRunnableScope(): void {
  if (!installed) return;
  installed.provider.runWithConfig = installed.original;
  installed = null;
}
