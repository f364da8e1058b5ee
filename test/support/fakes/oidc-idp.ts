// A real OpenID Connect provider in the test process (`oidc-provider`, the certified Node implementation) on
// 127.0.0.1:0: discovery, JWKS, authorization with PKCE, a single-use code, ID tokens signed RS256. The login step
// is automatic: whoever the test puts in `nextLogin` signs in. `tamper` re-signs the next ID tokens the token
// endpoint returns (changed claims, or another key under the same `kid`): how a misbehaving or hostile IdP looks
// to the gateway.
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import Provider from "oidc-provider";

/** An account at the IdP: its `sub` and the claims it releases (email, email_verified, name, ...). */
export interface IdpAccount {
  sub: string;
  [claim: string]: unknown;
}

/** How to re-sign ID tokens: claims to change, and/or sign with a key the IdP does not publish. */
export interface IdTokenTamper {
  claims?: Record<string, unknown>;
  foreignKey?: boolean;
}

/** A running IdP. */
export interface FakeIdp {
  /** The issuer, `http://127.0.0.1:<port>`. */
  issuer: string;
  /** Who signs in at the next authorization request. */
  nextLogin: IdpAccount;
  /** When set, ID tokens from the token endpoint are re-signed with these changes. */
  tamper: IdTokenTamper | null;
  /** Registers the gateway as a confidential client (client_secret_post) with these redirect URIs. */
  registerClient(client: { clientId: string; clientSecret: string; redirectUris: string[] }): void;
  close(): Promise<void>;
}

const KID = "idp-key-1";

/** Starts an IdP; register the client once the gateway's callback URL is known. */
export async function startFakeIdp(): Promise<FakeIdp> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const foreign = await generateKeyPair("RS256", { extractable: true });
  const signingJwk: JWK = { ...(await exportJWK(privateKey)), kid: KID, alg: "RS256", use: "sig" };
  let provider: any = null;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    if (!provider) return void res.writeHead(503).end("no client registered");
    if (req.url?.startsWith("/interaction/")) return void finishLogin(req, res).catch((err) => res.writeHead(500).end(String(err)));
    provider.callback()(req, res);
  });
  server.on("connection", (s) => (sockets.add(s), s.on("close", () => sockets.delete(s))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function finishLogin(req: any, res: any): Promise<void> {
    await provider.interactionDetails(req, res);
    await provider.interactionFinished(req, res, { login: { accountId: fake.nextLogin.sub } }, { mergeWithLastSubmission: false });
  }

  async function resign(idToken: string, tamper: IdTokenTamper): Promise<string> {
    const claims = { ...decodeJwt(idToken), ...tamper.claims };
    return new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: KID }).sign(tamper.foreignKey ? foreign.privateKey : privateKey);
  }

  const accounts = () => new Map([[fake.nextLogin.sub, fake.nextLogin]]);
  const fake: FakeIdp = {
    issuer,
    nextLogin: { sub: "alice-sub", email: "alice@example.com", email_verified: true, name: "Alice" },
    tamper: null,
    registerClient({ clientId, clientSecret, redirectUris }) {
      provider = new Provider(issuer, {
        clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: redirectUris, grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "client_secret_post" }],
        jwks: { keys: [signingJwk] },
        cookies: { keys: ["fake-idp-cookie-key"] },
        claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "upn"] },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        pkce: { required: () => true },
        findAccount: (_ctx: unknown, sub: string) => {
          const account = accounts().get(sub);
          return account ? { accountId: sub, claims: () => ({ ...account }) } : undefined;
        },
        // Consent is implied: every sign-in is granted the scopes it asks for.
        loadExistingGrant: async (ctx: any) => {
          const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
          grant.addOIDCScope("openid email profile");
          await grant.save();
          return grant;
        },
      });
      provider.use(async (ctx: any, next: () => Promise<void>) => {
        await next();
        if (ctx.path === "/token" && fake.tamper && ctx.body?.id_token) ctx.body = { ...ctx.body, id_token: await resign(ctx.body.id_token, fake.tamper) };
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
