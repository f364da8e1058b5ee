// Port of DeerFlow mcp/oauth.py: OAuth access tokens for http/sse MCP servers (client credentials and refresh token
// grants, RFC 6749 §4.4 and §6), cached, refreshed before expiry, and refreshed once more when the server answers 401.
// Plain fetch rather than an OAuth library: upstream's `token_field` / `expires_in_field` keys exist for token
// endpoints whose answers do not follow RFC 6749, which a strict client (oauth4webapi) refuses.
import type { McpOAuthConfig } from "../config/extensions-config.js";
import { getLogger } from "../logger.js";

/** How long one token request may take, in ms (upstream's httpx timeout). */
export const OAUTH_TOKEN_TIMEOUT_MS = 15_000;
/** Lifetime assumed when the token response names none, in seconds (upstream's default). */
const DEFAULT_EXPIRES_IN_S = 3600;

interface CachedToken {
  header: string;
  /** Epoch ms. */
  expiresAt: number;
}

/** The form an OAuth token request sends (upstream `_fetch_token`): extra params first, so reserved ones win. */
export function tokenRequestForm(oauth: McpOAuthConfig, refreshToken: string | null | undefined): URLSearchParams {
  const form = new URLSearchParams(oauth.extra_token_params);
  form.set("grant_type", oauth.grant_type);
  if (oauth.scope) form.set("scope", oauth.scope);
  if (oauth.audience) form.set("audience", oauth.audience);
  if (oauth.grant_type === "client_credentials") {
    if (!oauth.client_id || !oauth.client_secret) throw new Error("OAuth client_credentials requires client_id and client_secret");
  } else if (!refreshToken) {
    throw new Error("OAuth refresh_token grant requires refresh_token");
  }
  if (refreshToken && oauth.grant_type === "refresh_token") form.set("refresh_token", refreshToken);
  if (oauth.client_id) form.set("client_id", oauth.client_id);
  if (oauth.client_secret) form.set("client_secret", oauth.client_secret);
  return form;
}

/**
 * The access token of one MCP server. `authorization()` answers the cached `Authorization` header value while it is
 * more than `refresh_skew_seconds` from expiry, else fetches a new token; concurrent callers share one request. A
 * refresh token the endpoint rotates is kept in memory for the next refresh (never written back to the file).
 * Errors name the server, the endpoint's HTTP status and its RFC 6749 `error` code, never a secret.
 */
export class OAuthTokenManager {
  private token: CachedToken | null = null;
  private inFlight: Promise<string> | null = null;
  private refreshToken: string | null | undefined;

  /** @param now Clock in epoch ms (tests). */
  constructor(
    private readonly server: string,
    private readonly oauth: McpOAuthConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.refreshToken = oauth.refresh_token;
  }

  /** The `Authorization` header value (`Bearer <token>`). @param force drop the cached token first (after a 401). */
  authorization(force = false): Promise<string> {
    if (force) this.token = null;
    const skewMs = Math.max(this.oauth.refresh_skew_seconds, 0) * 1000;
    if (this.token && this.token.expiresAt > this.now() + skewMs) return Promise.resolve(this.token.header);
    this.inFlight ??= this.fetchToken().finally(() => void (this.inFlight = null));
    return this.inFlight;
  }

  private async fetchToken(): Promise<string> {
    const { oauth } = this;
    const form = tokenRequestForm(oauth, this.refreshToken);
    let response: Response;
    try {
      response = await fetch(oauth.token_url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: form,
        signal: AbortSignal.timeout(OAUTH_TOKEN_TIMEOUT_MS),
      });
    } catch (err) {
      throw new Error(`OAuth token endpoint for MCP server '${this.server}' is unreachable: ${(err as Error).message}`);
    }
    const payload = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    if (!response.ok) {
      const code = typeof payload?.error === "string" ? ` (${payload.error.slice(0, 64)})` : "";
      throw new Error(`OAuth token endpoint for MCP server '${this.server}' answered HTTP ${response.status}${code}`);
    }
    const access = payload?.[oauth.token_field];
    if (typeof access !== "string" || !access) throw new Error(`OAuth token response for MCP server '${this.server}' has no '${oauth.token_field}'`);
    const rotated = payload?.refresh_token;
    if (oauth.grant_type === "refresh_token" && typeof rotated === "string" && rotated) this.refreshToken = rotated;
    const type = payload?.[oauth.token_type_field];
    const expiresIn = Number(payload?.[oauth.expires_in_field] ?? DEFAULT_EXPIRES_IN_S);
    const seconds = Number.isFinite(expiresIn) ? Math.max(expiresIn, 1) : DEFAULT_EXPIRES_IN_S;
    // RFC 6750 scheme spelling: a lower-case `bearer` from the endpoint is sent as `Bearer`.
    const scheme = typeof type === "string" && type ? (type.toLowerCase() === "bearer" ? "Bearer" : type) : oauth.default_token_type;
    this.token = { header: `${scheme} ${access}`, expiresAt: this.now() + seconds * 1000 };
    getLogger().info({ server: this.server, expires_in: seconds }, `Refreshed OAuth access token for MCP server '${this.server}'`);
    return this.token.header;
  }
}

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A fetch for the MCP SDK's http/sse transports that sends the server's OAuth token on every request and, when the
 * server answers 401, fetches a new token and retries that request once (upstream refreshes on 401 once too).
 */
export function oauthFetch(manager: OAuthTokenManager, base: FetchLike = fetch): FetchLike {
  const send = async (url: string | URL, init: RequestInit | undefined, force: boolean) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", await manager.authorization(force));
    return base(url, { ...init, headers });
  };
  return async (url, init) => {
    const first = await send(url, init, false);
    if (first.status !== 401) return first;
    await first.body?.cancel().catch(() => undefined);
    return send(url, init, true);
  };
}

/** An MCP SDK client connected to an OAuth-protected server, and how to list its tools. */
export interface OAuthMcpClient {
  /** The SDK client (raw `callTool` for background tasks). */
  client: import("@modelcontextprotocol/sdk/client/index.js").Client;
  close(): Promise<void>;
}

/**
 * Connects to an http (streamable HTTP) or sse MCP server through {@link oauthFetch}, the configured `headers`
 * sent too. A token endpoint that fails makes the connection fail with its reason (the caller marks the server
 * unavailable). @throws Error for a stdio server with an `oauth` block (OAuth applies to http and sse only).
 */
export async function connectOAuthClient(name: string, transport: "http" | "sse", url: string, headers: Record<string, string>, oauth: McpOAuthConfig): Promise<OAuthMcpClient> {
  const [{ Client }, { StreamableHTTPClientTransport }, { SSEClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
  ]);
  const fetchWithToken = oauthFetch(new OAuthTokenManager(name, oauth));
  const options = { fetch: fetchWithToken, requestInit: { headers } };
  const client = new Client({ name: `deerflow-gateway:${name}`, version: "1" });
  const t = transport === "sse" ? new SSEClientTransport(new URL(url), options) : new StreamableHTTPClientTransport(new URL(url), options);
  try {
    await client.connect(t);
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
  return { client, close: () => client.close() };
}
