import { LangChainTracer } from "@langchain/core/tracers/tracer_langchain";
import { describe, expect, it } from "vitest";
import { buildTracingCallbacks } from "../../../src/agents/lead-agent/tracing.js";
import { readTracingConfig } from "../../../src/config/tracing-config.js";
import { captureLogs } from "../../support/capture-logs.js";

describe("readTracingConfig (config.md §2.3)", () => {
  it("enables LangSmith when flagged with 1/true/yes/on and a key is set", () => {
    for (const v of ["1", "true", "YES", "on"]) expect(readTracingConfig({ LANGSMITH_TRACING: v, LANGSMITH_API_KEY: "k" }).langsmith.enabled).toBe(true);
    expect(readTracingConfig({ LANGCHAIN_TRACING_V2: "true", LANGCHAIN_API_KEY: "k" }).langsmith).toMatchObject({ enabled: true, project: "deer-flow", endpoint: "https://api.smith.langchain.com" });
    expect(readTracingConfig({ LANGSMITH_TRACING: "true" }).langsmith).toMatchObject({ flagged: true, enabled: false });
    expect(readTracingConfig({ LANGSMITH_TRACING: "false", LANGSMITH_API_KEY: "k" }).langsmith.enabled).toBe(false);
    expect(readTracingConfig({ LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "k", LANGSMITH_PROJECT: "p" }).langsmith.project).toBe("p");
  });

  it("needs the flag and both keys for Langfuse", () => {
    expect(readTracingConfig({ LANGFUSE_TRACING: "true", LANGFUSE_PUBLIC_KEY: "a", LANGFUSE_SECRET_KEY: "b" }).langfuse).toMatchObject({ enabled: true, baseUrl: "https://cloud.langfuse.com" });
    expect(readTracingConfig({ LANGFUSE_TRACING: "true", LANGFUSE_PUBLIC_KEY: "a" }).langfuse.enabled).toBe(false);
  });
});

describe("tracing callbacks", () => {
  it("builds one shared LangSmith tracer, reports missing credentials and Langfuse once, and attaches without duplicates", async () => {
    const logs = captureLogs();
    try {
      const on = readTracingConfig({ LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "k", LANGSMITH_PROJECT: "proj" });
      const [tracer] = await buildTracingCallbacks(on);
      expect(tracer).toBeInstanceOf(LangChainTracer);
      expect((tracer as LangChainTracer).projectName).toBe("proj");
      expect((await buildTracingCallbacks(on))[0]).toBe(tracer);
      expect(await buildTracingCallbacks(readTracingConfig({ LANGSMITH_TRACING: "true", LANGFUSE_TRACING: "1" }))).toEqual([]);
      expect(logs.messages().some((m) => m.includes("LANGSMITH_API_KEY"))).toBe(true);
      expect(logs.messages().some((m) => m.includes("Langfuse"))).toBe(true);
    } finally {
      logs.restore();
    }
  });
});
