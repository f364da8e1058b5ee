import { describe, expect, it } from "vitest";
import { parseAppConfig } from "../../src/config/schema.js";

describe("the agent-quality middlewares' config sections (upstream keys and defaults)", () => {
  it("defaults as DeerFlow's config.example.yaml and app_config.py", () => {
    const c = parseAppConfig({});
    expect(c.llm_call).toEqual({ max_concurrent_calls: 0, retry_max_attempts: 3, retry_base_delay_ms: 1000, retry_cap_delay_ms: 8000, burst_retry_base_delay_ms: 5000 });
    expect(c.circuit_breaker).toEqual({ failure_threshold: 5, recovery_timeout_sec: 60 });
    expect(c.tool_output).toMatchObject({ enabled: true, externalize_min_chars: 12000, fallback_max_chars: 30000, storage_subdir: ".tool-results", exempt_tools: ["read_file", "read_file_tool"] });
    expect(c.read_before_write).toEqual({ enabled: true });
    expect(c.tool_progress).toMatchObject({ enabled: false, stagnation_threshold: 3 });
  });

  it.each([0, -5])("refuses a tool_output budget of %i at load, saying how to turn it off", (n) => {
    expect(() => parseAppConfig({ tool_output: { externalize_min_chars: n } })).toThrow(/externalize_min_chars must be a positive number of characters \(to turn the budget off, set tool_output.enabled: false/);
    expect(() => parseAppConfig({ tool_output: { tool_overrides: { bash: n } } })).toThrow(/tool_overrides value must be a positive/);
  });

  it("accepts tool_progress.enabled: true (ToolProgressMiddleware) and refuses out-of-range thresholds", () => {
    expect(parseAppConfig({ tool_progress: { enabled: true } }).tool_progress).toMatchObject({ enabled: true, warn_escalation_count: 2 });
    expect(() => parseAppConfig({ tool_progress: { enabled: true, jaccard_similarity_threshold: 1.5 } })).toThrow(/jaccard_similarity_threshold/);
  });

  it("refuses a storage_subdir that is a path", () => {
    expect(() => parseAppConfig({ tool_output: { storage_subdir: "a/b" } })).toThrow(/single directory name/);
  });
});
