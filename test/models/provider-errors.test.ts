import { MiddlewareError } from "langchain";
import { describe, expect, it } from "vitest";
import { classifyProviderError } from "../../src/models/provider-errors.js";

/** A provider error as the OpenAI SDK raises it: an Error carrying the HTTP status. */
const httpError = (status: number) => Object.assign(new Error(`HTTP ${status}`), { status });

describe("classifyProviderError", () => {
  it("looks through langchain's MiddlewareError wrappers, however deep, to the provider's error", () => {
    const wrapped = MiddlewareError.wrap(MiddlewareError.wrap(httpError(429), "inner"), "outer");
    expect(MiddlewareError.isInstance(wrapped)).toBe(true);
    expect(classifyProviderError(wrapped)).toEqual({ failure: "rate_limited", status: 429 });
  });

  it("recognises the wrapper by langchain's brand, not its class name (a bundler may rename the class)", () => {
    const wrapped = MiddlewareError.wrap(httpError(503), "Retry");
    // What a minifying bundle does to the class: same object, same brand, another constructor name.
    Object.setPrototypeOf(wrapped, Object.assign(Object.create(Object.getPrototypeOf(wrapped)), { constructor: class Mw extends Error {} }));
    expect(wrapped.constructor.name).not.toBe("MiddlewareError");
    expect(classifyProviderError(wrapped)).toEqual({ failure: "server_error", status: 503 });
  });

  it("does not unwrap an unrelated error class that happens to be called MiddlewareError", () => {
    class AppError extends Error {}
    // Named by hand: a class declared here as `MiddlewareError` would be renamed by the test transform (it shadows
    // the import), which is the very fragility of matching names.
    Object.defineProperty(AppError, "name", { value: "MiddlewareError" });
    const own = new AppError("app failure", { cause: httpError(500) });
    expect(own.constructor.name).toBe("MiddlewareError");
    expect(classifyProviderError(own)).toEqual({ failure: "other", status: undefined });
  });

  it("classifies by status and by connection code", () => {
    expect(classifyProviderError(httpError(400)).failure).toBe("client_error");
    expect(classifyProviderError(Object.assign(new Error("refused"), { code: "ECONNREFUSED" })).failure).toBe("connection");
    expect(classifyProviderError(new Error("plain")).failure).toBe("other");
  });
});
