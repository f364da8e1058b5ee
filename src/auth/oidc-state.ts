// The SSO state cookie (DeerFlow app/gateway/auth/oidc_state.py): state, nonce, PKCE verifier and where to go next,
// kept in the browser that started the sign-in for 5 minutes, so the callback is bound to that browser and any
// gateway process can finish it. Upstream signs it; we also encrypt it (JWE dir/A256GCM), so the PKCE verifier and
// nonce are not readable from the cookie.
import { createHash } from "node:crypto";
import { EncryptJWT, jwtDecrypt } from "jose";
import type { AuthorizationChecks } from "./oidc-client.js";

/** Cookie name prefix; the provider id follows (upstream's name). */
export const OIDC_STATE_COOKIE_PREFIX = "df_oidc_state_";
/** Lifetime of the state cookie, in seconds (upstream's 5 minutes). */
export const OIDC_STATE_MAX_AGE = 300;

/** What the state cookie carries. */
export interface OidcStatePayload extends AuthorizationChecks {
  provider: string;
  /** Validated relative path to land on after sign-in. */
  next: string;
  rememberMe: boolean;
}

/** Seals and opens state cookies with a key derived from the session secret (a separate key: never a session token). */
export class OidcStateCookies {
  private key: Uint8Array | null = null;

  /** @param secret The session signing secret, or a function returning it (read on first use). */
  constructor(private readonly secret: () => string) {}

  private keyBytes(): Uint8Array {
    this.key ??= createHash("sha256").update(`deerflow-gateway oidc-state\0${this.secret()}`).digest();
    return this.key;
  }

  /** The cookie name for `provider`. */
  name(provider: string): string {
    return `${OIDC_STATE_COOKIE_PREFIX}${provider}`;
  }

  /** The sealed cookie value (expires after {@link OIDC_STATE_MAX_AGE}). */
  async seal(payload: OidcStatePayload): Promise<string> {
    return new EncryptJWT({ ...payload })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setIssuedAt()
      .setExpirationTime(`${OIDC_STATE_MAX_AGE}s`)
      .setAudience("oidc-state")
      .encrypt(this.keyBytes());
  }

  /** The payload of a sealed value for `provider`, or null when it is missing, forged, expired or another provider's. */
  async open(value: string | undefined, provider: string): Promise<OidcStatePayload | null> {
    if (!value || value.length > 4096) return null;
    try {
      const { payload } = await jwtDecrypt(value, this.keyBytes(), { audience: "oidc-state" });
      const p = payload as unknown as OidcStatePayload;
      if (p.provider !== provider || typeof p.state !== "string") return null;
      return { provider: p.provider, state: p.state, nonce: p.nonce ?? null, codeVerifier: p.codeVerifier ?? null, next: p.next, rememberMe: p.rememberMe !== false };
    } catch {
      return null;
    }
  }
}
