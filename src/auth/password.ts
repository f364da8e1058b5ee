// Password hashing and strength rules (DeerFlow app/gateway/auth/password.py and routers/auth.py
// _validate_strong_password). scrypt from node:crypto instead of upstream's bcrypt: memory-hard, no native add-on.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

/** scrypt cost: N=2^15, r=8, p=1 (32 MiB, tens of ms per hash). Stored in each hash, so it can be raised later. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;

function scryptAsync(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  // maxmem must exceed 128 * N * r bytes; twice that leaves room for the implementation's own buffers.
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => scrypt(password.normalize("NFC"), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/**
 * Hashes `password` with scrypt on the libuv thread pool (the event loop keeps serving).
 * @returns `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>`.
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

/** Whether `password` matches `stored` (constant-time compare). A malformed or foreign hash is false, never an error. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = stored?.split("$") ?? [];
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0) || N > 2 ** 20) return false;
  const expected = Buffer.from(parts[5], "base64url");
  if (expected.length !== KEY_BYTES) return false;
  const actual = await scryptAsync(password, Buffer.from(parts[4], "base64url"), { N, r, p });
  return timingSafeEqual(actual, expected);
}

/** A hash of a random password: verified against when the email is unknown, so both cases take the same time. */
let dummyHash: Promise<string> | null = null;
/** The dummy hash (computed once, lazily). */
export function getDummyHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
  return dummyHash;
}

/**
 * Common passwords of 8+ characters, compared lower-cased. Upstream's list (drawn from SecLists' worst
 * passwords) plus a few more of the same source; a lower bound, not a breach-corpus check.
 */
const COMMON_PASSWORDS: ReadonlySet<string> = new Set([
  "password", "password1", "password12", "password123", "password1234", "12345678", "123456789", "1234567890",
  "qwerty12", "qwertyui", "qwerty123", "qwertyuiop", "abc12345", "abcd1234", "iloveyou", "letmein1", "welcome1",
  "welcome123", "admin123", "administrator", "passw0rd", "p@ssw0rd", "monkey12", "trustno1", "sunshine", "princess",
  "football", "baseball", "superman", "batman123", "starwars", "dragon123", "master123", "shadow12", "michael1",
  "jennifer", "computer", "11111111", "00000000", "88888888", "12341234", "1q2w3e4r", "1qaz2wsx", "zaq12wsx",
  "asdfghjk", "changeme", "letmein123", "internet", "whatever", "deerflow", "deerflow123",
]);

/** Longest password accepted (characters): bounds the work one login request can cost. */
export const MAX_PASSWORD_LENGTH = 256;

/**
 * Why `password` is too weak, or null when acceptable: shorter than 8 characters, longer than
 * {@link MAX_PASSWORD_LENGTH}, on the common list (case-insensitive), fewer than 4 distinct characters, or
 * containing the local part of `email` (4+ characters).
 */
export function passwordProblem(password: string, email?: string): string | null {
  if (password.length < 8) return "Password must be at least 8 characters";
  if (password.length > MAX_PASSWORD_LENGTH) return `Password must be at most ${MAX_PASSWORD_LENGTH} characters`;
  const lower = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lower)) return "Password is too common; choose a stronger password.";
  if (new Set(lower).size < 4) return "Password is too simple; use more different characters.";
  const local = email?.split("@")[0]?.toLowerCase() ?? "";
  if (local.length >= 4 && lower.includes(local)) return "Password must not contain your email name.";
  return null;
}
