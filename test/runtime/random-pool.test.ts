import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { v7 } from "uuid";
import { installRandomPool } from "../../src/runtime/random-pool.js";

let restore: (() => void) | null = null;
// The test setup installs the pool (as the server does): each case starts from the platform's function.
beforeEach(() => installRandomPool()());
afterAll(() => void installRandomPool());
afterEach(() => {
  restore?.();
  restore = null;
});

describe("installRandomPool", () => {
  it("fills small integer arrays in place from the buffer, never repeating bytes", () => {
    const platform = globalThis.crypto.getRandomValues;
    restore = installRandomPool(256);
    expect(globalThis.crypto.getRandomValues).not.toBe(platform);
    const seen = new Set<string>();
    // 64 x 16 bytes: four refills of a 256-byte buffer.
    for (let i = 0; i < 64; i++) {
      const a = new Uint8Array(16);
      expect(globalThis.crypto.getRandomValues(a)).toBe(a);
      seen.add(Buffer.from(a).toString("hex"));
    }
    expect(seen.size).toBe(64);
    // A view into a larger buffer: only its own bytes change.
    const backing = new Uint8Array(32);
    const view = new Uint32Array(backing.buffer, 8, 4);
    globalThis.crypto.getRandomValues(view);
    expect([...backing.subarray(0, 8), ...backing.subarray(24)].every((b) => b === 0)).toBe(true);
    expect(backing.subarray(8, 24).some((b) => b !== 0)).toBe(true);
  });

  it("keeps the platform's answers for what it does not pool: large arrays, float arrays, over-quota requests", () => {
    restore = installRandomPool();
    const big = new Uint8Array(4096);
    globalThis.crypto.getRandomValues(big);
    expect(big.some((b) => b !== 0)).toBe(true);
    expect(() => globalThis.crypto.getRandomValues(new Float32Array(4) as never)).toThrow(/TypeMismatch|must be|integer/i);
    expect(() => globalThis.crypto.getRandomValues(new Uint8Array(65_537))).toThrow(/QuotaExceeded|exceeds/i);
  });

  it("serves the libraries that make run ids, and restores the platform function", () => {
    const platform = globalThis.crypto.getRandomValues;
    restore = installRandomPool();
    expect(installRandomPool()).toBe(restore);
    const ids = new Set(Array.from({ length: 1000 }, () => v7()));
    expect(ids.size).toBe(1000);
    restore();
    restore = null;
    expect(globalThis.crypto.getRandomValues).toBe(platform);
    expect(Object.prototype.hasOwnProperty.call(globalThis.crypto, "getRandomValues")).toBe(false);
  });
});
