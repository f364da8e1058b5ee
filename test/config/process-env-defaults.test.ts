import { describe, expect, it } from "vitest";
import { applyCallbackEnvDefault, applyProviderEnvDefaults } from "../../src/config/process-env-defaults.js";

describe("process environment defaults of the server entry point", () => {
  it("defaults the provider variables the shipped config references, keeping set ones", () => {
    const env: NodeJS.ProcessEnv = { OPENAI_API_KEY: "sk-set", OPENAI_BASE_URL: " " };
    expect(applyProviderEnvDefaults(env)).toEqual(["OPENAI_BASE_URL"]);
    expect(env).toEqual({ OPENAI_API_KEY: "sk-set", OPENAI_BASE_URL: "https://api.openai.com/v1" });
  });

  it("runs LangChain callbacks inline unless the operator chose, or a tracer is on", () => {
    const plain: NodeJS.ProcessEnv = {};
    expect(applyCallbackEnvDefault(plain)).toBe(true);
    expect(plain.LANGCHAIN_CALLBACKS_BACKGROUND).toBe("false");
    const chosen: NodeJS.ProcessEnv = { LANGCHAIN_CALLBACKS_BACKGROUND: "true" };
    expect(applyCallbackEnvDefault(chosen)).toBe(false);
    expect(chosen.LANGCHAIN_CALLBACKS_BACKGROUND).toBe("true");
    for (const flag of ["LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGFUSE_TRACING"]) {
      const traced: NodeJS.ProcessEnv = { [flag]: "True" };
      expect(applyCallbackEnvDefault(traced)).toBe(false);
      expect(traced.LANGCHAIN_CALLBACKS_BACKGROUND).toBeUndefined();
    }
    const off: NodeJS.ProcessEnv = { LANGSMITH_TRACING: "false" };
    expect(applyCallbackEnvDefault(off)).toBe(true);
  });
});
