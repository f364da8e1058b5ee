// Async-context values that ride on @langchain/core's AsyncLocalStorage instead of one AsyncLocalStorage each.
//
// On Node 20 every AsyncLocalStorage that was ever entered adds a property to every promise the process creates
// (its `init` hook copies the store, undefined or not). A gateway run creates ~1,600 promises, and the process had
// three enabled storages (langchain's, the config pin, the run scope): five hidden properties per promise, which
// V8 keeps in a 6-slot backing store grown from a 3-slot one. With one storage a promise carries three, the first
// backing store fits, and two property copies a promise are gone.
import { AsyncLocalStorage } from "node:async_hooks";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";

/** The property of a store that holds the slots' values (a frozen record keyed by each slot's symbol). */
const SLOTS = Symbol.for("deerflow:context_slots");

type Slots = Readonly<Record<symbol, unknown>>;
type Store = Record<PropertyKey, unknown>;
interface Storage {
  getStore(): unknown;
  run(store: unknown, callback: (...args: unknown[]) => unknown, ...args: unknown[]): unknown;
  enterWith(store: unknown): void;
}

/** Stores made by {@link ContextSlot.run} / {@link ContextSlot.enterWith}: their slots are meant as they are. */
const carriers = new WeakSet<object>();
/** Marks a storage whose `run` / `enterWith` carry the slots. */
const CARRYING = Symbol.for("deerflow:context_slots_carrying");
let storage: Storage | null = null;

function isObject(value: unknown): value is Store {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

/**
 * The store to enter in place of `next` so that the slots of the current context go on: a store that holds none
 * gets them (langchain builds a fresh store for every runnable scope), `undefined` becomes a store holding only
 * them, and a store made by a slot keeps its own. A store holding other slots, or one that cannot take a property,
 * is seen through a derived one.
 */
function carry(current: unknown, next: unknown): unknown {
  const slots = isObject(current) ? (current[SLOTS] as Slots | undefined) : undefined;
  if (slots === undefined) return next;
  if (next === undefined || next === null) return { [SLOTS]: slots };
  if (!isObject(next) || carriers.has(next) || next[SLOTS] === slots) return next;
  // A store that holds no slots yet (langchain makes one per runnable scope) takes them. One that holds others is
  // a store entered again from another context (code may still run in it): it is seen through a derived one.
  if (next[SLOTS] === undefined && Object.isExtensible(next)) {
    next[SLOTS] = slots;
    return next;
  }
  const derived = Object.create(next) as Store;
  derived[SLOTS] = slots;
  return derived;
}

/**
 * The shared storage: @langchain/core's global AsyncLocalStorage (created here when nothing made it yet, as
 * `@langchain/core/context` and LangGraph do), with `run` and `enterWith` wrapped once so that every store entered
 * there (langchain's runnable scopes, langsmith's traceables, the gateway's lean scopes) carries the slots on.
 */
function sharedStorage(): Storage {
  if (storage) return storage;
  AsyncLocalStorageProviderSingleton.initializeGlobalInstance(new AsyncLocalStorage());
  const instance = AsyncLocalStorageProviderSingleton.getInstance() as unknown as Storage & { [CARRYING]?: true };
  if (!instance[CARRYING]) {
    const { run, enterWith, getStore } = instance;
    instance.run = function carryingRun(this: Storage, store, callback, ...args) {
      return run.call(this, carry(getStore.call(this), store), callback, ...args);
    };
    instance.enterWith = function carryingEnterWith(this: Storage, store) {
      enterWith.call(this, carry(getStore.call(this), store));
    };
    instance[CARRYING] = true;
  }
  storage = instance;
  return instance;
}

/** A new store holding `slots` that reads, for langchain, as `current` does (our own stores are not stacked). */
function storeWith(current: unknown, slots: Slots): Store {
  const base = isObject(current) && carriers.has(current) ? (Object.getPrototypeOf(current) as object | null) : current;
  const store = (isObject(base) && base !== Object.prototype ? Object.create(base) : {}) as Store;
  store[SLOTS] = slots;
  carriers.add(store);
  return store;
}

/**
 * One value carried by the async context, like an `AsyncLocalStorage` of its own, but kept in the store of
 * @langchain/core's AsyncLocalStorage (see the file comment for why). Inside langchain's runnable scopes the value
 * is the one of the context that entered them; LangChain sees the stores it entered (a slot entered inside a
 * runnable scope enters a store derived from langchain's).
 * @example
 * ```ts
 * const requestId = new ContextSlot<string>("requestId");
 * await requestId.run("r1", async () => { await somethingAsync(); requestId.get(); }); // "r1"
 * ```
 */
export class ContextSlot<T> {
  private readonly key: symbol;

  /** @param name Shows in the slot's symbol (debugging only); two slots of one name are still distinct. */
  constructor(name: string) {
    this.key = Symbol(name);
  }

  /** The value of the current async context, or undefined outside any {@link run} / {@link enterWith}. */
  get(): T | undefined {
    const store = sharedStorage().getStore();
    return isObject(store) ? ((store[SLOTS] as Slots | undefined)?.[this.key] as T | undefined) : undefined;
  }

  /**
   * Runs `fn` with `value` as this slot's value for everything it does and awaits (other slots keep theirs).
   * @returns What `fn` returns (a promise stays a promise).
   */
  run<R>(value: T, fn: () => R): R {
    const shared = sharedStorage();
    const current = shared.getStore();
    return shared.run(storeWith(current, this.with(current, value)), fn) as R;
  }

  /** Makes `value` this slot's value for the rest of the current synchronous execution and what it schedules. */
  enterWith(value: T): void {
    const shared = sharedStorage();
    const current = shared.getStore();
    shared.enterWith(storeWith(current, this.with(current, value)));
  }

  private with(current: unknown, value: T): Slots {
    const slots = isObject(current) ? (current[SLOTS] as Slots | undefined) : undefined;
    return Object.freeze({ ...slots, [this.key]: value });
  }
}
