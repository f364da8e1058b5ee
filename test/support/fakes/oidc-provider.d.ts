// oidc-provider ships no type declarations; the fake IdP uses a small part of it (see oidc-idp.ts).
declare module "oidc-provider";
