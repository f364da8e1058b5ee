// Spend estimation of the operations console (DeerFlow app/gateway/routers/console.py, "Pricing"): per-model prices
// from `models[*].pricing` in config.yaml, cache-aware token cost, and a run's cost from its token counters.
import { getLogger } from "../../logger.js";

/** Prices of one model, per million tokens, in `currency`. */
export interface ModelPricing {
  input_per_million: number;
  output_per_million: number;
  /** Upper-case ISO code (default USD). */
  currency: string;
  /** Price of prompt-cache-hit input tokens; null bills hits at the full input price. */
  input_cache_hit_per_million: number | null;
}

/** Prices keyed by model `name` and provider `model` id (and their lower-case forms). */
export type PricingMap = Map<string, ModelPricing>;

/** A model entry as the config holds it: only the keys pricing reads. */
export interface PricedModel {
  name: string;
  model?: string;
  pricing?: unknown;
}

const price = (value: unknown): number => (value === undefined || value === null || value === "" || value === 0 || value === false ? 0 : Number(value));

/**
 * The pricing map of the configured models (upstream `_build_pricing_map`). A model whose `pricing` is not an object
 * is unpriced; a malformed price skips that model with a warning; input and output both <= 0 is unpriced. Entries
 * are keyed by `name` and `model` (first entry wins per key). Mixed currencies disable cost reporting (an empty map,
 * with a warning): the console shows one currency.
 */
export function buildPricingMap(models: readonly PricedModel[]): PricingMap {
  const pricing: PricingMap = new Map();
  let first: { currency: string; model: string } | undefined;
  for (const model of models) {
    const raw = model.pricing;
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) continue;
    const fields = raw as Record<string, unknown>;
    const input = price(fields.input_per_million);
    const output = price(fields.output_per_million);
    const hit = fields.input_cache_hit_per_million === undefined || fields.input_cache_hit_per_million === null ? null : Number(fields.input_cache_hit_per_million);
    if (!Number.isFinite(input) || !Number.isFinite(output) || (hit !== null && !Number.isFinite(hit))) {
      getLogger().warn({ model: model.name }, "console: ignoring malformed pricing on a model");
      continue;
    }
    if (input <= 0 && output <= 0) continue;
    const currency = String(fields.currency || "USD").trim().toUpperCase() || "USD";
    if (!first) first = { currency, model: model.name };
    else if (currency !== first.currency) {
      getLogger().warn({ currencies: [first.currency, currency], models: [first.model, model.name] }, "console: disabling cost reporting because model pricing mixes currencies");
      return new Map();
    }
    const entry: ModelPricing = { input_per_million: input, output_per_million: output, currency, input_cache_hit_per_million: hit };
    for (const key of [model.name, model.model]) {
      if (!key) continue;
      if (!pricing.has(key)) pricing.set(key, entry);
      if (!pricing.has(key.toLowerCase())) pricing.set(key.toLowerCase(), entry);
    }
  }
  return pricing;
}

/** The display currency: the first configured entry's; null without pricing. */
export const pricingCurrency = (pricing: PricingMap): string | null => pricing.values().next().value?.currency ?? null;

/** The prices of `model` (exact key, else lower-case), or null. */
export function lookupPricing(pricing: PricingMap, model: string | null | undefined): ModelPricing | null {
  if (!model) return null;
  return pricing.get(model) ?? pricing.get(model.toLowerCase()) ?? null;
}

/**
 * Cache-aware spend of one usage (upstream `_token_cost`): `cacheRead` is clamped into [0, input] and billed at the
 * hit price (the input price when none is set); the rest of the input at the input price; output at the output price.
 */
export function tokenCost(input: number, output: number, p: ModelPricing, cacheRead = 0): number {
  const inTokens = Math.max(Math.trunc(input || 0), 0);
  const hits = Math.min(Math.max(Math.trunc(cacheRead || 0), 0), inTokens);
  const hitPrice = p.input_cache_hit_per_million ?? p.input_per_million;
  return ((inTokens - hits) / 1_000_000) * p.input_per_million + (hits / 1_000_000) * hitPrice + (output / 1_000_000) * p.output_per_million;
}

/**
 * One run's spend from its totals priced at the model it resolved to (upstream `_run_cost`'s fallback path: the
 * gateway records no per-model breakdown), or null when that model is unpriced or the run used no tokens.
 */
export function runCost(pricing: PricingMap, run: { model_name: string | null; total_input_tokens: number; total_output_tokens: number }): number | null {
  const p = lookupPricing(pricing, run.model_name);
  if (!p) return null;
  if (!run.total_input_tokens && !run.total_output_tokens) return null;
  return tokenCost(run.total_input_tokens, run.total_output_tokens, p);
}

/** `value` rounded to 6 decimals (upstream `round(x, 6)`). */
export const round6 = (value: number): number => Math.round(value * 1e6) / 1e6;
