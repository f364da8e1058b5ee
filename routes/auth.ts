// Auth routes (DeerFlow app/gateway/routers/auth.py, local accounts) and API keys, under /api/v1/auth. Paths,
// bodies, status codes, cookies and error shapes follow upstream so the DeerFlow web app works unchanged.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { getAuthConfig } from "../src/config/auth-config.js";
import { DEFAULT_PRINCIPAL, principalOf } from "../src/auth/principal.js";
import { getDummyHash, hashPassword, MAX_PASSWORD_LENGTH, passwordProblem, verifyPassword } from "../src/auth/password.js";
import { EmailTakenError, type UserRecord } from "../src/auth/repositories.js";
import { ACCESS_TOKEN_COOKIE, clearAuthCookies, cookiesOf, isSecureRequest, sessionCookiePolicy, setCsrfCookie, setSessionCookies } from "../src/auth/cookies.js";
import { ValidationError } from "../src/errors.js";
import { doc, validInput } from "./openapi.js";

/** Upstream's error body: `{detail: {code, message}}` (the web app's parseAuthError reads it). */
const authError = (reply: FastifyReply, status: number, code: string, message: string) => reply.code(status).send({ detail: { code, message } });

const boolish = z.union([z.boolean(), z.enum(["true", "false", "1", "0", "on", "off"])]).transform((v) => v === true || v === "true" || v === "1" || v === "on");
const email = z.string().trim().toLowerCase().pipe(z.email({ message: "value is not a valid email address" })).refine((v) => v.length <= 254, "email is too long");

const CredentialsSchema = z.object({ email, password: z.string(), remember_me: boolish.default(true) });
const LoginSchema = z.looseObject({ username: z.string().min(1), password: z.string().min(1), remember_me: boolish.default(true) });
const ChangePasswordSchema = z.object({ current_password: z.string(), new_password: z.string(), new_email: email.nullish(), remember_me: boolish.nullish() });
const ApiKeyCreateSchema = z.object({ name: z.string().trim().min(1).max(100) });

/**
 * The body as `schema` validates it ({@link validInput}: on a route declaring the schema, the compiler's parse);
 * then a weak `password_field` is upstream's `value_error` issue (the web app shows its `msg`). Issues never echo
 * the submitted values, so no password reaches a response or a log.
 * @throws ValidationError (422) with a FastAPI-style detail list.
 */
function parseBody<T extends Record<string, unknown>>(schema: z.ZodType<T>, body: unknown, passwordField?: string): T {
  const data = validInput(schema, body);
  if (passwordField) {
    const raw = data[passwordField];
    const emailValue = data.email ?? data.new_email;
    const problem = typeof raw === "string" ? passwordProblem(raw, typeof emailValue === "string" ? emailValue : undefined) : null;
    if (problem) throw new ValidationError("Invalid request body", [{ type: "value_error", loc: ["body", passwordField], msg: `Value error, ${problem}` }]);
  }
  return data;
}

/** Upstream's UserResponse. */
const userResponse = (user: Pick<UserRecord, "id" | "email" | "system_role" | "needs_setup" | "oauth_provider">) => ({
  id: user.id,
  email: user.email,
  system_role: user.system_role,
  needs_setup: user.needs_setup,
  oauth_provider: user.oauth_provider,
});

/** The account shown for the default principal when auth is disabled (upstream `get_auth_disabled_user`). */
const AUTH_DISABLED_USER = { id: DEFAULT_PRINCIPAL.id, email: "default@test.local", system_role: "admin" as const, needs_setup: false, oauth_provider: null };

/**
 * Registers, under `/api/v1/auth`: `GET setup-status`, `POST initialize`, `POST register`, `POST login/local`
 * (form-encoded, as the web app sends it; JSON also accepted), `POST logout`, `GET me`, `POST change-password`,
 * and the API keys (the SSO routes, `providers` among them, are in auth-sso.ts): `POST|GET api-keys`, `DELETE api-keys/:key_id`.
 */
export async function authRoutes(app: FastifyInstance): Promise<void> {
  const { service, limiter, lifetimeSeconds } = app.auth;
  const { users } = app.deerflow.persistence;
  // The login form is application/x-www-form-urlencoded (OAuth2PasswordRequestForm upstream); scoped to these routes.
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 16 * 1024 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  const registrationEnabled = () => getAuthConfig(app.deerflow.getAppConfig()).local.allow_registration;

  /** Signs a session for `user` and sets the session, persistence and CSRF cookies. */
  const startSession = async (request: FastifyRequest, reply: FastifyReply, user: UserRecord, rememberMe: boolean | null | undefined) => {
    const token = await service.startSession(user);
    const policy = sessionCookiePolicy(request, rememberMe, lifetimeSeconds);
    setSessionCookies(reply, token, policy);
    setCsrfCookie(reply, policy);
  };

  app.get("/setup-status", { schema: doc("auth", "Whether the first admin must be created; whether registration is open") }, async () => ({
    needs_setup: (await users.countAdmins()) === 0,
    registration_enabled: registrationEnabled(),
  }));

  app.post("/initialize", { schema: doc("auth", "Create the first admin (only while none exists); signs in (201)", { body: CredentialsSchema }) }, async (request, reply) => {
    const body = parseBody(CredentialsSchema, request.body, "password");
    if ((await users.countAdmins()) > 0) return authError(reply, 409, "system_already_initialized", "System already initialized");
    let user: UserRecord | null;
    try {
      user = await users.create({ email: body.email, password_hash: await hashPassword(body.password), system_role: "admin" }, { onlyIfNoAdmin: true });
    } catch (err) {
      if (err instanceof EmailTakenError) return authError(reply, 400, "email_already_exists", "Email already registered");
      throw err;
    }
    if (!user) return authError(reply, 409, "system_already_initialized", "System already initialized");
    request.log.info({ user_id: user.id }, "first admin created");
    await startSession(request, reply, user, body.remember_me);
    return reply.code(201).send(userResponse(user));
  });

  app.post("/register", { schema: doc("auth", "Create a user account (when auth.local.allow_registration); signs in (201)", { body: CredentialsSchema }) }, async (request, reply) => {
    if (!registrationEnabled()) return authError(reply, 403, "registration_disabled", "Self-registration is disabled on this deployment");
    const body = parseBody(CredentialsSchema, request.body, "password");
    let user: UserRecord | null;
    try {
      user = await users.create({ email: body.email, password_hash: await hashPassword(body.password), system_role: "user" });
    } catch (err) {
      if (err instanceof EmailTakenError) return authError(reply, 400, "email_already_exists", "Email already registered");
      throw err;
    }
    await startSession(request, reply, user!, body.remember_me);
    return reply.code(201).send(userResponse(user!));
  });

  app.post("/login/local", { schema: doc("auth", "Sign in with email (form field username) and password; sets the session cookie") }, async (request, reply) => {
    const address = request.ip;
    const body = parseBody(LoginSchema, request.body);
    // Checked and counted in one step before the password check: concurrent guesses cannot all pass a check
    // that a later failure would have closed. Unknown emails are counted too (same answer as a wrong password).
    const gate = await limiter.begin(address, body.username);
    if (gate.locked) return reply.code(429).header("retry-after", String(gate.retryAfterSeconds)).send({ detail: "Too many login attempts. Try again later." });
    const user = body.password.length <= MAX_PASSWORD_LENGTH ? await users.getByEmail(body.username) : null;
    // An unknown email costs one scrypt as well, so timing does not tell which emails have accounts.
    const ok = await verifyPassword(body.password, user?.password_hash ?? (await getDummyHash()));
    if (!user || !ok) {
      request.log.info({ client: address }, "login failed");
      return authError(reply, 401, "invalid_credentials", "Incorrect email or password");
    }
    await limiter.succeeded(address, body.username);
    await startSession(request, reply, user, body.remember_me);
    return { expires_in: lifetimeSeconds, needs_setup: user.needs_setup };
  });

  app.post("/logout", { schema: doc("auth", "End the session (in every process) and clear the session cookies") }, async (request, reply) => {
    const token = request.headers.cookie ? cookiesOf(request)[ACCESS_TOKEN_COOKIE] : undefined;
    // The server-side session ends, so a copy of the cookie taken before stops working too.
    if (token) await service.endSession(token);
    clearAuthCookies(reply, isSecureRequest(request));
    return { message: "Successfully logged out" };
  });

  app.get("/me", { schema: doc("auth", "The signed-in account") }, async (request, reply) => {
    const principal = principalOf(request);
    if (principal.source === "auth_disabled") return AUTH_DISABLED_USER;
    const user = await service.getFreshUser(principal.id);
    if (!user) return authError(reply, 401, "user_not_found", "User not found");
    return userResponse(user);
  });

  app.post("/change-password", { schema: doc("auth", "Change the password (and optionally the email); other sessions stop working", { body: ChangePasswordSchema }) }, async (request, reply) => {
    const principal = principalOf(request);
    if (principal.source === "auth_disabled") {
      return authError(reply, 400, "invalid_credentials", "Password changes are not available when DEER_FLOW_AUTH_DISABLED=1.");
    }
    const body = parseBody(ChangePasswordSchema, request.body, "new_password");
    // Read now, not from the cache: the token version bumped below must follow the stored one, or a change made
    // by another process would be undone.
    const user = await service.getFreshUser(principal.id);
    if (!user) return authError(reply, 401, "user_not_found", "User not found");
    if (!user.password_hash) return authError(reply, 400, "invalid_credentials", "OAuth users cannot change password");
    if (!(await verifyPassword(body.current_password, user.password_hash))) return authError(reply, 400, "invalid_credentials", "Current password is incorrect");
    const updated: UserRecord = { ...user, password_hash: await hashPassword(body.new_password), token_version: user.token_version + 1 };
    if (body.new_email) {
      updated.email = body.new_email;
      if (user.needs_setup) updated.needs_setup = false;
    }
    try {
      await service.updateUser(updated);
    } catch (err) {
      if (err instanceof EmailTakenError) return authError(reply, 400, "email_already_exists", "Email already in use");
      throw err;
    }
    // Every session of the account ends, in every process; the caller gets a new one.
    await service.endAllSessions(updated.id);
    await startSession(request, reply, updated, body.remember_me);
    return { message: "Password changed successfully" };
  });

  /** API keys belong to accounts; the default principal of an auth-disabled server has none. */
  const accountOf = (request: FastifyRequest) => {
    const principal = principalOf(request);
    if (principal.source === "auth_disabled") throw new ValidationError("API keys need a signed-in account; they are not available when DEER_FLOW_AUTH_DISABLED=1");
    return principal.id;
  };

  app.post("/api-keys", { schema: doc("auth", "Create an API key; the key is in this response only (201)", { body: ApiKeyCreateSchema }) }, async (request, reply) => {
    const userId = accountOf(request);
    const body = parseBody(ApiKeyCreateSchema, request.body);
    const { view, key } = await service.createApiKey(userId, body.name);
    return reply.code(201).send({ ...view, key });
  });

  app.get("/api-keys", { schema: doc("auth", "List your API keys (prefix, name, created, last used; never the key)") }, async (request) => ({ api_keys: await service.listApiKeys(accountOf(request)) }));

  app.delete<{ Params: { key_id: string } }>("/api-keys/:key_id", { schema: doc("auth", "Revoke an API key (204); it stops working at once") }, async (request, reply) => {
    if (!(await service.revokeApiKey(accountOf(request), request.params.key_id))) return reply.code(404).send({ detail: "API key not found" });
    return reply.code(204).send();
  });
}
