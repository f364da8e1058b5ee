// The `auth` section of config.yaml (DeerFlow deerflow/config/auth_config.py, local part only). Kept out of
// schema.ts: the app config is a loose object, so this section is parsed here when it is needed.
import { z } from "zod";
import type { AppConfig } from "./schema.js";

/** `auth.local`: local (email + password) accounts. */
export const AuthConfigSchema = z.looseObject({
  local: z.looseObject({ allow_registration: z.boolean().default(true) }).default({ allow_registration: true }),
});

/** Parsed `auth` section. */
export type AuthConfig = z.infer<typeof AuthConfigSchema>;

/**
 * The `auth` section of `appConfig`, defaults filled in (`auth.local.allow_registration: true`, as upstream when
 * the key is absent). A malformed section does not reopen registration: it reads as closed.
 */
export function getAuthConfig(appConfig: AppConfig): AuthConfig {
  const parsed = AuthConfigSchema.safeParse((appConfig as Record<string, unknown>).auth ?? {});
  return parsed.success ? parsed.data : { local: { allow_registration: false } };
}
