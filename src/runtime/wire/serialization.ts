// Serialization to the LangGraph wire format (what `@langchain/langgraph-api` and DeerFlow's `serialize_lc_object` send): messages become flat dicts.
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { redactStateValues } from "../../agents/server-owned-state.js";

/** A message as the wire carries it: `{type, id, content, ...}` (never LangChain's `{lc, kwargs}` form). */
export type WireMessage = Record<string, unknown> & { type: string };

/**
 * Flattens a LangChain message: `{...toDict().data, type}` with `type` in `human|ai|tool|system|...`, without any
 * `lc_*` key (`lc_kwargs`, and `lc_serializable`, `lc_namespace`, `lc_direct_tool_output` that a message built from
 * a spread of another one carries in its fields): those are LangChain's serialization internals, not wire fields.
 */
export function serializeMessage(message: BaseMessage): WireMessage {
  const fast = plainFields(message);
  if (fast) return fast;
  const { type, data } = message.toDict();
  const out: WireMessage = { type };
  for (const [k, v] of Object.entries(data as unknown as Record<string, unknown>)) if (!k.startsWith("lc_")) out[k] = v;
  out.type = type;
  return out;
}

/** Message fields whose wire name is their own name (LangChain's aliases for them are identities; already snake case). */
const PLAIN_MESSAGE_KEYS = new Set(["content", "additional_kwargs", "response_metadata", "tool_calls", "invalid_tool_calls", "tool_call_chunks", "usage_metadata", "id", "name", "tool_call_id", "status", "artifact"]);

/** Most nesting a value may have for {@link plainFields} (deeper, or a cycle: LangChain's own path is taken). */
const PLAIN_MAX_DEPTH = 16;

/**
 * True when `toJSON`'s escaping would return `value` unchanged for JSON purposes: primitives, arrays, and objects
 * whose prototype is Object's or null, none holding an `lc` key (LangChain escapes those) at any depth. LangChain
 * serializables inside are left to their own `toJSON`, as `toDict` leaves them.
 */
function isPlainValue(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== "object") return typeof value !== "function" && typeof value !== "symbol" && typeof value !== "bigint";
  if (depth > PLAIN_MAX_DEPTH) return false;
  if (Array.isArray(value)) return value.every((v) => isPlainValue(v, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  if ("lc" in value || "__lc_escaped__" in value) return false;
  for (const v of Object.values(value)) if (!isPlainValue(v, depth + 1)) return false;
  return true;
}

/**
 * What `toDict()` gives for a message whose fields are all {@link PLAIN_MESSAGE_KEYS} holding plain values, built
 * without LangChain's serializer (its alias walk up the prototype chain, deep escape copy and key mapping were 5%
 * of a token-heavy run's CPU: every streamed token is a message). Null when the message needs the general path.
 */
function plainFields(message: BaseMessage): WireMessage | null {
  const kwargs = (message as unknown as { lc_kwargs?: Record<string, unknown> }).lc_kwargs;
  if (!kwargs || typeof kwargs !== "object") return null;
  const self = message as unknown as Record<string, unknown>;
  const out: WireMessage = { type: message.getType() };
  for (const key of Object.keys(kwargs)) {
    if (!PLAIN_MESSAGE_KEYS.has(key)) return null;
    const value = key in self ? self[key] : kwargs[key];
    if (!isPlainValue(value, 0)) return null;
    out[key] = value;
  }
  out.type = message.getType();
  return out;
}

/**
 * Converts any stream payload to plain JSON data: messages flattened (anywhere in the tree), dates to ISO
 * strings, `Map`/`Set` to objects/arrays, bigints to strings, functions and symbols dropped, cycles cut, and
 * objects with `toJSON` honoured. Never throws.
 */
export function toWire(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (value === null || value === undefined) return value ?? null;
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "function":
    case "symbol":
      return undefined;
  }
  if (isBaseMessage(value)) return toWire(serializeMessage(value), seen);
  if (value instanceof Date) return value.toISOString();
  const obj = value as object;
  if (seen.has(obj)) return "[Circular]";
  seen.add(obj);
  try {
    if (Array.isArray(obj)) return obj.map((v) => toWire(v, seen) ?? null);
    if (obj instanceof Map) return Object.fromEntries([...obj.entries()].map(([k, v]) => [String(k), toWire(v, seen)]));
    if (obj instanceof Set) return [...obj].map((v) => toWire(v, seen));
    if (obj instanceof Error) return { name: obj.name, message: obj.message };
    const toJSON = (obj as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === "function" && obj.constructor !== Object) {
      const json = toJSON.call(obj);
      if (json !== obj) return toWire(json, seen);
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) {
      const w = toWire(v, seen);
      if (w !== undefined) out[k] = w;
    }
    return out;
  } finally {
    seen.delete(obj);
  }
}

/** Agent-loop bookkeeping channels that are not thread state (langchain's `jumpTo`, `structuredResponse`). */
const INTERNAL_CHANNELS = new Set(["jumpTo", "structuredResponse"]);

/**
 * A `values` payload: internal `__pregel_*` keys and langchain's bookkeeping channels removed (`__interrupt__` kept),
 * host paths redacted ({@link redactStateValues}), everything else `toWire`d.
 */
export function serializeValues(values: unknown): unknown {
  if (!values || typeof values !== "object" || Array.isArray(values)) return toWire(values);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) if (!k.startsWith("__pregel") && !INTERNAL_CHANNELS.has(k)) out[k] = toWire(v);
  return redactStateValues(out);
}
