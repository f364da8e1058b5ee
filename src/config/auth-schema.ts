// The `auth` section of config.yaml in zod (DeerFlow deerflow/config/auth_config.py): local accounts and SSO over
// OpenID Connect. zod-only, so schema.ts can compose it without importing anything that reads the app config.
import { z } from "zod";

/** Provider ids: they appear in URLs (`/api/v1/auth/oauth/{id}`) and cookie names (upstream's pattern). */
export const OIDC_PROVIDER_ID = /^[A-Za-z0-9_-]+$/;

const httpUrl = (what: string) =>
  z.string().refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password;
    } catch {
      return false;
    }
  }, `${what} must be an http(s) URL without credentials`);

/**
 * Which ID token / userinfo claim carries what (our addition; upstream reads `email`, `email_verified`, `name`).
 * Azure AD, for instance, often has the address in `preferred_username` or `upn`.
 */
export const OidcClaimMappingSchema = z.strictObject({
  email: z.string().min(1).default("email"),
  email_verified: z.string().min(1).default("email_verified"),
  name: z.string().min(1).default("name"),
});

/**
 * One identity provider (upstream `OIDCProviderConfig`, same keys and defaults). Strict: a misspelt key
 * (`alowed_email_domains`) stops the start instead of silently dropping a restriction.
 */
export const OidcProviderConfigSchema = z
  .strictObject({
    display_name: z.string().min(1),
    issuer: httpUrl("issuer"),
    client_id: z.string().min(1),
    /** `$VAR` in config.yaml; substituted at load like every `$VAR`. */
    client_secret: z.string().nullish(),
    redirect_uri: httpUrl("redirect_uri").nullish(),
    scopes: z.array(z.string().min(1)).default(["openid", "email", "profile"]).refine((s) => s.includes("openid"), "scopes must include openid"),
    token_endpoint_auth_method: z.enum(["client_secret_post", "client_secret_basic", "none"]).default("client_secret_post"),
    auto_create_users: z.boolean().default(true),
    require_verified_email: z.boolean().default(true),
    /** Our addition: refuse identities without an email (upstream always does; `false` signs in by `sub` alone). */
    require_email: z.boolean().default(true),
    allowed_email_domains: z.array(z.string().min(1)).default([]),
    admin_emails: z.array(z.string().min(1)).default([]),
    claim_mapping: OidcClaimMappingSchema.default(OidcClaimMappingSchema.parse({})),
    pkce_enabled: z.boolean().default(true),
    nonce_enabled: z.boolean().default(true),
    authorization_endpoint: httpUrl("authorization_endpoint").nullish(),
    token_endpoint: httpUrl("token_endpoint").nullish(),
    userinfo_endpoint: httpUrl("userinfo_endpoint").nullish(),
    jwks_uri: httpUrl("jwks_uri").nullish(),
  })
  .refine((p) => p.token_endpoint_auth_method === "none" || !!p.client_secret, {
    message: "client_secret is required unless token_endpoint_auth_method is none",
    path: ["client_secret"],
  });

/** A provider entry after parsing. */
export type OidcProviderConfig = z.infer<typeof OidcProviderConfigSchema>;

/** `auth.oidc` (upstream `OIDCAuthConfig`). */
export const OidcAuthConfigSchema = z.strictObject({
  enabled: z.boolean().default(false),
  /** Where the web app lives, for the redirects after a callback (unset: the gateway's own origin). */
  frontend_base_url: httpUrl("frontend_base_url").nullish(),
  providers: z
    .record(z.string(), OidcProviderConfigSchema)
    .default({})
    .superRefine((providers, ctx) => {
      for (const id of Object.keys(providers)) {
        if (!OIDC_PROVIDER_ID.test(id)) ctx.addIssue({ code: "custom", path: [id], message: "provider ids may hold only letters, digits, '_' and '-'" });
      }
    }),
});

/** Parsed `auth.oidc`. */
export type OidcAuthConfig = z.infer<typeof OidcAuthConfigSchema>;

/** `auth` (upstream `AuthAppConfig`): `local` and `oidc`. */
export const AuthConfigSchema = z.looseObject({
  local: z.looseObject({ allow_registration: z.boolean().default(true) }).default({ allow_registration: true }),
  oidc: OidcAuthConfigSchema.default(OidcAuthConfigSchema.parse({})),
});

/** Parsed `auth` section. */
export type AuthConfig = z.infer<typeof AuthConfigSchema>;
