// The `memory:` section of config.yaml (DeerFlow config/memory_config.py and DeerMem's backends/deermem config).
// Host-shared keys live at the top of the section; the default backend's knobs live under `backend_config`.
import { z } from "zod";
import { getLogger } from "../../logger.js";

/** Keys every backend shares (DeerFlow `_SHARED_FIELDS`). */
export const MEMORY_SHARED_KEYS = ["enabled", "mode", "injection_enabled", "shutdown_flush_timeout_seconds", "manager_class", "backend_config"] as const;

/**
 * DeerMem keys that older configs set at the top of `memory:`; at load they move into `backend_config` (as DeerFlow's
 * `load_memory_config_from_dict` does), with one warning. An explicit `backend_config` value wins.
 */
export const LEGACY_TOP_LEVEL_KEYS = [
  "storage_path", "debounce_seconds", "max_facts", "fact_confidence_threshold", "max_injection_tokens", "token_counting",
  "guaranteed_categories", "guaranteed_token_budget", "model_name",
  "storage_class", "staleness_review_enabled", "staleness_age_days", "staleness_min_candidates", "staleness_max_removals_per_cycle",
  "staleness_protected_categories", "staleness_max_lifetime_multiplier", "staleness_max_extension_days", "consolidation_enabled",
  "consolidation_min_facts", "consolidation_max_groups_per_cycle", "consolidation_max_sources",
] as const;

/**
 * Upstream DeerMem knobs this gateway accepts (so an upstream config loads) but does not act on: storage tuning that
 * has no counterpart in the single-file store, the hybrid eviction policy, staleness review and consolidation.
 * Documented in docs/memory.md; a warning names the ones set.
 */
export const ACCEPTED_WITHOUT_EFFECT_KEYS = [
  "storage_class", "strict_user_scope", "manifest_filename", "file_lock_timeout_seconds", "retrieval_adapter",
  "fact_eviction_policy", "fact_eviction_shadow_enabled", "eviction_confidence_weight", "eviction_confirmation_weight",
  "eviction_access_weight", "eviction_confirmation_half_life_days", "eviction_access_half_life_days",
  "eviction_correction_reserved_fraction", "eviction_correction_reserved_max", "eviction_audit_max_entries",
  "staleness_review_enabled", "staleness_age_days", "staleness_min_candidates", "staleness_max_removals_per_cycle",
  "staleness_protected_categories", "staleness_max_lifetime_multiplier", "staleness_max_extension_days",
  "consolidation_enabled", "consolidation_min_facts", "consolidation_max_groups_per_cycle", "consolidation_max_sources",
  "watermark_max_keys",
] as const;

const noEffect = Object.fromEntries(ACCEPTED_WITHOUT_EFFECT_KEYS.map((k) => [k, z.unknown().optional()])) as Record<(typeof ACCEPTED_WITHOUT_EFFECT_KEYS)[number], z.ZodOptional<z.ZodUnknown>>;

/**
 * `memory.backend_config` of the default `deermem` backend (DeerMem `DeerMemConfig`, the knobs this gateway
 * implements; defaults are upstream's). Unknown keys are refused.
 */
export const DeerMemConfigSchema = z.strictObject({
  /** Root directory of the memory files; "" = `DEER_FLOW_HOME`. Relative paths resolve against `DEER_FLOW_HOME`. */
  storage_path: z.string().default(""),
  /** Quiet time after the last turn before a (user, agent) batch is extracted, in seconds (upstream 30). */
  debounce_seconds: z.number().min(0).max(3600).default(30),
  /** Pending conversations admitted at once (0 = unlimited); beyond it new updates are dropped with a warning. */
  queue_max_depth: z.number().int().min(0).default(1000),
  /** The `models[]` entry that extracts memory; null = `model` below, else the default (first) model. */
  model_name: z.string().min(1).nullable().default(null),
  /**
   * DeerMem's own model sub-config (`provider`, `model`, `api_key`, `base_url`, `temperature`; LangChain
   * `initChatModel` parameters, provider default `openai`). A bare `model` that names a `models[]` entry uses that
   * entry. Empty or null: the default model.
   */
  model: z
    .strictObject({ provider: z.string().min(1).nullish(), model: z.string().min(1).nullish(), api_key: z.string().nullish(), base_url: z.string().nullish(), temperature: z.number().min(0).max(2).nullish() })
    .nullish()
    .transform((v) => (v && v.model ? v : null)),
  /** Most facts kept per (user, agent); the lowest-confidence ones are evicted first. */
  max_facts: z.number().int().min(1).max(10_000).default(100),
  /** Extracted facts below this confidence are not stored. */
  fact_confidence_threshold: z.number().min(0).max(1).default(0.7),
  /** Token budget of the `<memory>` block injected into a run. */
  max_injection_tokens: z.number().int().min(1).max(100_000).default(2000),
  /** How the budget counts tokens: `tiktoken` (cl100k_base, bundled, no download) or `char` (CJK-aware estimate). */
  token_counting: z.enum(["tiktoken", "char"]).default("tiktoken"),
  /** Fact categories injected first from their own budget, so corrections survive a tight budget. */
  guaranteed_categories: z.array(z.string().min(1)).default(["correction"]),
  /** Token budget of the guaranteed categories. */
  guaranteed_token_budget: z.number().int().min(0).max(100_000).default(500),
  ...noEffect,
});

/** The parsed `backend_config` of the default backend. */
export type DeerMemConfig = z.infer<typeof DeerMemConfigSchema>;

/** Names of the built-in backends (`memory.manager_class`). */
export const BUILT_IN_MANAGERS = ["deermem", "noop"] as const;

const warned = new Set<string>();
const warnOnce = (key: string, message: string, extra: Record<string, unknown> = {}) => {
  if (warned.has(key)) return;
  warned.add(key);
  getLogger().warn(extra, message);
};

/** Moves legacy top-level DeerMem keys into `backend_config` (DeerFlow's auto-migration). Other keys stay for the strict check. */
function migrateLegacyKeys(input: unknown): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const raw = { ...(input as Record<string, unknown>) };
  const given = raw.backend_config ?? {};
  const backend = given && typeof given === "object" && !Array.isArray(given) ? { ...(given as Record<string, unknown>) } : given;
  const moved: string[] = [];
  for (const key of LEGACY_TOP_LEVEL_KEYS) {
    if (!(key in raw)) continue;
    const value = raw[key];
    delete raw[key];
    if (value === null || value === "" || !backend || typeof backend !== "object") continue;
    if (!(key in (backend as Record<string, unknown>))) (backend as Record<string, unknown>)[key] = value;
    moved.push(key);
  }
  if (moved.length) {
    raw.backend_config = backend;
    warnOnce(`legacy:${moved.join(",")}`, `memory: moved legacy top-level keys into memory.backend_config (${moved.join(", ")}); move them there in config.yaml to silence this`);
  }
  return raw;
}

/**
 * `memory` (DeerFlow `MemoryConfig`): the host-shared keys, strict (an unknown key is refused, naming it), plus
 * `backend_config`, which the default `deermem` backend validates with {@link DeerMemConfigSchema} (defaults filled
 * in); for `noop` and custom backends it is passed through as is. Legacy top-level DeerMem keys are migrated into
 * `backend_config` first.
 */
export const MemoryConfigSchema = z.preprocess(
  migrateLegacyKeys,
  z
    .strictObject({
      enabled: z.boolean().default(true),
      /** middleware: extraction after each turn; tool: the model gets memory_search/add/update/delete instead. */
      mode: z.enum(["middleware", "tool"]).default("middleware"),
      injection_enabled: z.boolean().default(true),
      /** Budget of the drain of pending updates when the server closes, in seconds (1-300). */
      shutdown_flush_timeout_seconds: z.number().min(1).max(300).default(30),
      /** `deermem` (default), `noop`, or a `module:Export` path to a class implementing MemoryManager. Read at start-up. */
      manager_class: z.string().min(1).default("deermem"),
      backend_config: z.record(z.string(), z.unknown()).nullish().transform((v) => v ?? {}),
    })
    .transform((config, ctx) => {
      if (config.manager_class !== "deermem") return config;
      const parsed = DeerMemConfigSchema.safeParse(config.backend_config);
      if (!parsed.success) {
        for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, path: ["backend_config", ...issue.path] } as never);
        return z.NEVER;
      }
      const ignored = ACCEPTED_WITHOUT_EFFECT_KEYS.filter((k) => parsed.data[k] !== undefined);
      if (ignored.length) warnOnce(`noeffect:${ignored.join(",")}`, `memory.backend_config: ${ignored.join(", ")} accepted for DeerFlow compatibility but have no effect in this gateway`);
      return { ...config, backend_config: parsed.data as Record<string, unknown> };
    }),
);

/** The validated `memory` section. */
export type MemoryConfig = z.infer<typeof MemoryConfigSchema>;

/** The default backend's knobs of a memory section (defaults when the section selects another backend). */
export function deerMemConfigOf(memory: MemoryConfig | undefined): DeerMemConfig {
  const parsed = DeerMemConfigSchema.safeParse(memory?.manager_class === "deermem" ? memory.backend_config : {});
  return parsed.success ? parsed.data : DeerMemConfigSchema.parse({});
}
