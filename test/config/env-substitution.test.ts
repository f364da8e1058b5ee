import { describe, expect, it } from "vitest";
import { formatKeyPath, substituteEnv } from "../../src/config/env-substitution.js";
import { ConfigError } from "../../src/errors.js";

describe("substituteEnv (config.md §3.1, CF-015)", () => {
  const env = { DF_TEST_KEY: "sk-123", EMPTY: "" };

  it("replaces a string value that starts with $ by the named environment variable", () => {
    expect(substituteEnv({ api_key: "$DF_TEST_KEY" }, env)).toEqual({ api_key: "sk-123" });
  });

  it("leaves a $ reference inside a longer string literal", () => {
    expect(substituteEnv({ Authorization: "Bearer $DF_TEST_KEY" }, env)).toEqual({ Authorization: "Bearer $DF_TEST_KEY" });
  });

  it("never substitutes keys, only values", () => {
    expect(substituteEnv({ $literal_key: "x" }, env)).toEqual({ $literal_key: "x" });
  });

  it("passes numbers, booleans and null through unchanged", () => {
    expect(substituteEnv({ timeout: 30, on: true, nothing: null }, env)).toEqual({ timeout: 30, on: true, nothing: null });
  });

  it("recurses into nested mappings and list items", () => {
    expect(substituteEnv({ a: [{ b: "$DF_TEST_KEY" }, "$DF_TEST_KEY", 1] }, env)).toEqual({ a: [{ b: "sk-123" }, "sk-123", 1] });
  });

  it("gives an empty string for a variable that is set but empty", () => {
    expect(substituteEnv({ api_key: "$EMPTY" }, env)).toEqual({ api_key: "" });
  });

  it("fails naming the variable and the key path when a referenced variable is unset", () => {
    let caught: unknown;
    try {
      substituteEnv({ models: [{ api_key: "$DF_MISSING" }] }, env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toContain("DF_MISSING");
    expect((caught as Error).message).toContain("not found");
    expect((caught as Error).message).toContain("models[0].api_key");
  });

  it("has no brace syntax: ${X} looks up a variable literally named {X}", () => {
    expect(() => substituteEnv({ api_key: "${DF_TEST_KEY}" }, env)).toThrow("{DF_TEST_KEY}");
  });
});

describe("formatKeyPath", () => {
  it("formats mixed key paths as dotted keys with [index] segments", () => {
    expect(formatKeyPath(["models", 0, "api_key"])).toBe("models[0].api_key");
    expect(formatKeyPath([])).toBe("(root)");
  });
});
