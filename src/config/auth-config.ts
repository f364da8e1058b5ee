// The `auth` section of config.yaml (DeerFlow deerflow/config/auth_config.py): local accounts and SSO. The schema
// is in auth-schema.ts and validated with the rest of config.yaml, so a malformed section stops the start (or a
// reload keeps the last good config) with a message naming the key.
import type { AppConfig } from "./schema.js";
import { AuthConfigSchema, type AuthConfig } from "./auth-schema.js";

export { AuthConfigSchema, type AuthConfig, type OidcAuthConfig, type OidcProviderConfig, OIDC_PROVIDER_ID } from "./auth-schema.js";

/**
 * The `auth` section of `appConfig`, defaults filled in (`auth.local.allow_registration: true`, as upstream when
 * the key is absent; `auth.oidc.enabled: false`). A config built without the schema (an embedder's object) is
 * parsed here; a malformed one reads as closed registration and no SSO.
 */
export function getAuthConfig(appConfig: AppConfig): AuthConfig {
  const section = (appConfig as Record<string, unknown>).auth;
  const parsed = AuthConfigSchema.safeParse(section ?? {});
  return parsed.success ? parsed.data : AuthConfigSchema.parse({ local: { allow_registration: false } });
}
