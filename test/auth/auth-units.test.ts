import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { assertAuthEnvAllowed, readAuthEnv } from "../../src/config/auth-env.js";
import { hashPassword, passwordProblem, verifyPassword } from "../../src/auth/password.js";
import { loadJwtSecret, SessionTokens } from "../../src/auth/session-token.js";

describe("readAuthEnv", () => {
  it("reads the switch (exactly '1'), production, secret, trusted proxies and expiry", () => {
    expect(readAuthEnv({})).toEqual({ disabled: false, production: false, jwtSecret: null, trustedProxies: [], tokenExpiryDays: 7, loginMaxFailuresPerAddress: 100 });
    expect(readAuthEnv({ DEER_FLOW_AUTH_DISABLED: "true" }).disabled).toBe(false);
    const env = readAuthEnv({ DEER_FLOW_AUTH_DISABLED: "1", ENVIRONMENT: "Prod", AUTH_JWT_SECRET: " s3cret ", AUTH_TRUSTED_PROXIES: "10.0.0.0/8, ::1 ,192.168.1.5", AUTH_TOKEN_EXPIRY_DAYS: "2", AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS: " 500 " });
    expect(env).toEqual({ disabled: true, production: true, jwtSecret: "s3cret", trustedProxies: ["10.0.0.0/8", "::1", "192.168.1.5"], tokenExpiryDays: 2, loginMaxFailuresPerAddress: 500 });
    expect(() => assertAuthEnvAllowed(env)).toThrow(/refused/);
    expect(() => assertAuthEnvAllowed({ disabled: true, production: false })).not.toThrow();
  });

  it("stops on a malformed trusted proxy or expiry instead of skipping it", () => {
    expect(() => readAuthEnv({ AUTH_TRUSTED_PROXIES: "10.0.0.0/33" })).toThrow(/AUTH_TRUSTED_PROXIES/);
    expect(() => readAuthEnv({ AUTH_TRUSTED_PROXIES: "proxy.local" })).toThrow(/AUTH_TRUSTED_PROXIES/);
    expect(() => readAuthEnv({ AUTH_TOKEN_EXPIRY_DAYS: "90" })).toThrow(/AUTH_TOKEN_EXPIRY_DAYS/);
    expect(() => readAuthEnv({ AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS: "0" })).toThrow(/AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS/);
    expect(() => readAuthEnv({ AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS: "lots" })).toThrow(/AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS/);
  });
});

describe("passwords", () => {
  it("hashes with scrypt (salted, verifiable), and a malformed hash verifies false", async () => {
    const a = await hashPassword("tortoise-lantern-42");
    const b = await hashPassword("tortoise-lantern-42");
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword("tortoise-lantern-42", a)).toBe(true);
    expect(await verifyPassword("tortoise-lantern-43", a)).toBe(false);
    expect(await verifyPassword("x", "$2b$12$bcrypt-looking")).toBe(false);
    expect(await verifyPassword("x", null)).toBe(false);
  });

  it("names why a password is weak", () => {
    expect(passwordProblem("short")).toMatch(/at least 8/);
    expect(passwordProblem("QWERTY123")).toMatch(/too common/);
    expect(passwordProblem("abababab")).toMatch(/too simple/);
    expect(passwordProblem("my-name-is-alice!", "Alice@example.com")).toMatch(/email/);
    expect(passwordProblem("tortoise-lantern-42", "alice@example.com")).toBeNull();
  });
});

describe("session tokens", () => {
  it("creates the secret file once (0600) and reuses it; AUTH_JWT_SECRET wins", () => {
    const home = mkdtempSync(path.join(tmpdir(), "dfgw-secret-"));
    try {
      const first = loadJwtSecret(null, home);
      expect(first.source).toBe("file");
      expect(statSync(path.join(home, ".jwt_secret")).mode & 0o777).toBe(0o600);
      expect(loadJwtSecret(null, home).secret).toBe(first.secret);
      expect(loadJwtSecret("from-env", home)).toEqual({ secret: "from-env", source: "env" });
      writeFileSync(path.join(home, ".jwt_secret"), "operator-provided\n");
      expect(loadJwtSecret(null, home).secret).toBe("operator-provided");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("verifies its own tokens, refuses another key's, and reports expiry even for a token verified before", async () => {
    // 60 s, not 1 s: `exp` is in whole seconds, so a 1 s token can expire at the next second boundary, mid-test.
    const tokens = new SessionTokens("k1", 60);
    const token = await tokens.sign("u1", 3, "s1");
    expect(await tokens.verify(token)).toEqual({ sub: "u1", ver: 3, sid: "s1" });
    expect(await new SessionTokens("k2", 60).verify(token)).toBe("token_invalid");
    expect(await tokens.verify("not.a.jwt")).toBe("token_invalid");
    // Past the 60 s lifetime on the clock the cache and jose read, without waiting for it.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 62_000 });
    try {
      expect(await tokens.verify(token)).toBe("token_expired");
    } finally {
      vi.useRealTimers();
    }
  });
});
