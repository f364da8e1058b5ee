// Shape limits for every JSON body a client sends, checked at the edge (the app's JSON content parser) before any
// route, store or graph sees the value. Why: a value nested thousands deep is parsed fine by V8 but overflows the
// stack of every recursive consumer later (JSON.stringify into the run table, LangChain's `load`, which stops at
// depth 50 when a checkpoint is read back); an oversized string or array is stored and re-sent on every read.
import secureJson from "secure-json-parse";
import { ValidationError, type ValidationIssue } from "../errors.js";

/** Shape limits of one JSON document. */
export interface JsonLimits {
  /** Deepest container nesting (the root object counts as 1). */
  maxDepth: number;
  /** Longest string value or object key, in UTF-16 code units. */
  maxStringLength: number;
  /** Most items in one array. */
  maxArrayLength: number;
  /** Most keys in one object. */
  maxObjectKeys: number;
}

/**
 * Defaults: depth 32 keeps a message's `additional_kwargs` well under LangChain's deserialization limit (50, counted
 * from the checkpoint root, where a message sits 5 levels deep) and far under any stack limit; 4 Mi characters per
 * string leaves room for a pasted document or an inline image data URL within the 8 MiB run body limit.
 */
export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxDepth: 32,
  maxStringLength: 4 * 1024 * 1024,
  maxArrayLength: 10_000,
  maxObjectKeys: 1_000,
});

/** A visited node: its value, how it was reached (for the error path), and its depth. */
interface Frame {
  value: unknown;
  key: string | number | null;
  parent: Frame | null;
  depth: number;
}

function pathOf(frame: Frame | null, extra?: string | number): (string | number)[] {
  const out: (string | number)[] = [];
  for (let f = frame; f; f = f.parent) if (f.key !== null) out.push(f.key);
  out.reverse();
  if (extra !== undefined) out.push(extra);
  return ["body", ...out];
}

/**
 * Finds the first place where `value` breaks `limits`, walking iteratively (so the check itself cannot overflow).
 * @returns a FastAPI-style issue whose `loc` is `["body", ...path]` (types `json_too_deep`, `string_too_long`,
 *   `array_too_long`, `object_too_large`), or null when the value is within the limits.
 */
export function findJsonLimitViolation(value: unknown, limits: JsonLimits = DEFAULT_JSON_LIMITS): ValidationIssue | null {
  const stack: Frame[] = [{ value, key: null, parent: null, depth: 0 }];
  while (stack.length) {
    const frame = stack.pop()!;
    const v = frame.value;
    if (typeof v === "string") {
      if (v.length > limits.maxStringLength) {
        return { type: "string_too_long", loc: pathOf(frame), msg: `String should have at most ${limits.maxStringLength} characters`, ctx: { max_length: limits.maxStringLength } };
      }
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    const depth = frame.depth + 1;
    if (depth > limits.maxDepth) {
      return { type: "json_too_deep", loc: pathOf(frame), msg: `JSON nesting deeper than ${limits.maxDepth} levels`, ctx: { max_depth: limits.maxDepth } };
    }
    if (Array.isArray(v)) {
      if (v.length > limits.maxArrayLength) {
        return { type: "array_too_long", loc: pathOf(frame), msg: `List should have at most ${limits.maxArrayLength} items`, ctx: { max_length: limits.maxArrayLength } };
      }
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: i, parent: frame, depth });
      continue;
    }
    const keys = Object.keys(v);
    if (keys.length > limits.maxObjectKeys) {
      return { type: "object_too_large", loc: pathOf(frame), msg: `Object should have at most ${limits.maxObjectKeys} keys`, ctx: { max_keys: limits.maxObjectKeys } };
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      if (key.length > limits.maxStringLength) {
        return { type: "string_too_long", loc: pathOf(frame, key.slice(0, 64)), msg: `Key should have at most ${limits.maxStringLength} characters`, ctx: { max_length: limits.maxStringLength } };
      }
      stack.push({ value: (v as Record<string, unknown>)[key], key, parent: frame, depth });
    }
  }
  return null;
}

/**
 * Parses a client's JSON body: empty or blank text is `{}`; `__proto__` / `constructor.prototype` keys are
 * refused (prototype poisoning, as Fastify's own parser does with secure-json-parse); the result must be within
 * `limits`.
 * @throws SyntaxError for malformed JSON or a poisoning key (the error handler answers 422 `json_invalid`).
 * @throws ValidationError 422 whose detail names the offending field path (see {@link findJsonLimitViolation}).
 */
export function parseClientJson(text: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): unknown {
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" });
  } catch (err) {
    throw err instanceof SyntaxError ? err : new SyntaxError((err as Error).message);
  }
  const issue = findJsonLimitViolation(value, limits);
  if (issue) throw new ValidationError(issue.msg, [issue]);
  return value;
}
