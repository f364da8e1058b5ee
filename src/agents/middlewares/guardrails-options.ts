// The `guardrails` and `authorization` option schemas (DeerFlow config/guardrails_config.py and
// config/authorization_config.py), in a zod-only leaf module: the app config schema composes them without loading
// the middleware.
import { z } from "zod";

/** A provider named by a `use:` path (`module:Export`), with the settings handed to its constructor. */
export const GuardProviderConfigSchema = z.object({
  use: z.string().min(1),
  /** Provider settings, passed to the constructor as one object (upstream passes them as keyword arguments). */
  config: z.record(z.string(), z.unknown()).nullish().transform((c) => c ?? {}),
});
/** A validated provider entry. */
export type GuardProviderConfig = z.infer<typeof GuardProviderConfigSchema>;

/** Longest wait for a provider's decision by default, in ms (gateway addition: upstream has no timeout). */
export const DEFAULT_GUARD_TIMEOUT_MS = 5000;

/**
 * `guardrails`: a provider checks every tool call before it runs. `fail_closed` (default true) denies a call when
 * the provider throws or passes `timeout_ms`; `passport` is handed to the provider as `agent_id` (OAP).
 */
export const GuardrailsConfigSchema = z
  .object({
    enabled: z.boolean().default(false),
    fail_closed: z.boolean().default(true),
    passport: z.string().nullish().transform((p) => p ?? null),
    provider: GuardProviderConfigSchema.nullish().transform((p) => p ?? null),
    /** Gateway addition: how long a provider may take per decision, in ms (1..600000). */
    timeout_ms: z.number().int().min(1).max(600_000).default(DEFAULT_GUARD_TIMEOUT_MS),
  })
  .refine((c) => !c.enabled || c.provider !== null, { message: "guardrails.enabled is true but no provider is configured; set guardrails.provider.use", path: ["provider"] });
/** A validated `guardrails` section. */
export type GuardrailsConfig = z.infer<typeof GuardrailsConfigSchema>;

/**
 * `authorization`: roles and per-role tool permissions (DeerFlow RBAC). `default_role` applies to a run whose user
 * has no role; `fail_closed` denies every tool when the provider errors.
 */
export const AuthorizationConfigSchema = z
  .object({
    enabled: z.boolean().default(false),
    fail_closed: z.boolean().default(true),
    default_role: z.string().min(1).default("user"),
    provider: GuardProviderConfigSchema.nullish().transform((p) => p ?? null),
    timeout_ms: z.number().int().min(1).max(600_000).default(DEFAULT_GUARD_TIMEOUT_MS),
  })
  .refine((c) => !c.enabled || c.provider !== null, { message: "authorization.enabled is true but no provider is configured; set authorization.provider.use", path: ["provider"] });
/** A validated `authorization` section. */
export type AuthorizationConfig = z.infer<typeof AuthorizationConfigSchema>;
