// Config sections re-validated on every agent build (the factory's middleware options) are parsed once per
// section object: the app config is immutable until a reload replaces it, so the parse of the same object
// always gives the same result. A reload brings new objects, which are parsed again.
import type { z } from "zod";

const caches = new WeakMap<z.ZodType, WeakMap<object, unknown>>();

/**
 * `schema.parse(value)`, remembered per (schema, object): the same object gives the same parsed output without
 * parsing again. Callers must treat both the input and the output as immutable. Primitives and null are parsed
 * every time.
 * @throws the schema's ZodError for invalid input (never cached).
 */
export function parseOnce<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  if (value === null || typeof value !== "object") return schema.parse(value);
  let cache = caches.get(schema);
  if (!cache) caches.set(schema, (cache = new WeakMap()));
  if (cache.has(value)) return cache.get(value) as z.output<S>;
  const parsed = schema.parse(value);
  cache.set(value, parsed);
  return parsed;
}
