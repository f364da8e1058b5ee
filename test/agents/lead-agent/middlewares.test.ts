import type { ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { buildMiddlewares } from "../../../src/agents/lead-agent/middlewares.js";
import { DeerflowMiddleware } from "../../../src/agents/middlewares/base.js";
import { LoopDetectionMiddleware } from "../../../src/agents/middlewares/loop-detection.js";
import { SubagentLimitMiddleware } from "../../../src/agents/middlewares/subagent-limit.js";
import { parseAppConfig } from "../../../src/config/schema.js";

class Custom extends DeerflowMiddleware {
  name = "Custom";
  wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
    return h(req) as never;
  }
}

describe("buildMiddlewares: app-layer chain (agent-factory.md §2.10)", () => {
  it("keeps the seed order with custom middlewares just before SafetyFinishReason and Clarification (AF-036, AF-039)", () => {
    const chain = buildMiddlewares({ appConfig: parseAppConfig({}), custom: [new Custom()] });
    expect(chain.map((m) => m.name)).toEqual([
      "ToolOutputBudgetMiddleware", "ToolResultSanitizationMiddleware", "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware",
      "InputSanitizationMiddleware", "DanglingToolCallMiddleware", "LLMErrorHandlingMiddleware", "ReadBeforeWriteMiddleware", "ToolErrorHandlingMiddleware",
      "DynamicContextMiddleware", "SkillActivationMiddleware", "TokenUsageMiddleware", "TitleMiddleware", "MemoryMiddleware",
      "SystemMessageCoalescingMiddleware", "LoopDetectionMiddleware", "Custom", "TerminalResponseMiddleware", "ModelLengthFinishReasonMiddleware", "SafetyFinishReasonMiddleware", "ClarificationMiddleware",
    ]);
  });

  it("adds every optional slot in DeerFlow's order", async () => {
    const { ScriptedChatModel } = await import("../../../src/models/scripted-chat-model.js");
    const appConfig = parseAppConfig({ summarization: { enabled: true }, token_budget: { enabled: true } });
    const chain = buildMiddlewares({
      appConfig, isPlanMode: true, supportsVision: true, summaryModel: new ScriptedChatModel(),
      deferredTools: { names: new Set(["mcp_a"]), hash: "h1" }, subagentEnabled: true,
    });
    expect(chain.map((m) => m.name)).toEqual([
      "ToolOutputBudgetMiddleware", "ToolResultSanitizationMiddleware", "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware",
      "InputSanitizationMiddleware", "DanglingToolCallMiddleware", "LLMErrorHandlingMiddleware", "ReadBeforeWriteMiddleware", "ToolErrorHandlingMiddleware",
      "DynamicContextMiddleware", "SkillActivationMiddleware", "SummarizationMiddleware", "TodoMiddleware", "TokenUsageMiddleware",
      "TitleMiddleware", "MemoryMiddleware", "ViewImageMiddleware", "DeferredToolFilterMiddleware", "SystemMessageCoalescingMiddleware",
      "SubagentLimitMiddleware", "LoopDetectionMiddleware", "TokenBudgetMiddleware", "TerminalResponseMiddleware", "ModelLengthFinishReasonMiddleware", "SafetyFinishReasonMiddleware", "ClarificationMiddleware",
    ]);
  });

  it("leaves out TokenUsage, SafetyFinishReason and an empty DeferredToolFilter when they are off", () => {
    const appConfig = parseAppConfig({ token_usage: { enabled: false }, safety_finish_reason: { enabled: false } });
    const names = buildMiddlewares({ appConfig, deferredTools: { names: new Set(), hash: "h" } }).map((m) => m.name);
    for (const n of ["TokenUsageMiddleware", "SafetyFinishReasonMiddleware", "DeferredToolFilterMiddleware", "SubagentLimitMiddleware"]) expect(names).not.toContain(n);
  });

  it("wires SubagentLimit from the request and subagents.max_total_per_run (AF-038)", () => {
    const appConfig = parseAppConfig({ subagents: { max_total_per_run: 7 } });
    const limit = (o: object) => buildMiddlewares({ appConfig, ...o }).find((m) => m instanceof SubagentLimitMiddleware) as SubagentLimitMiddleware | undefined;
    expect(limit({ subagentEnabled: true, maxConcurrentSubagents: 3 })).toMatchObject({ maxConcurrent: 3, maxTotal: 7 });
    expect(limit({ subagentEnabled: true, maxConcurrentSubagents: 3, maxTotalSubagents: 5 })).toMatchObject({ maxConcurrent: 3, maxTotal: 5 });
    expect(limit({ subagentEnabled: false })).toBeUndefined();
  });

  it("gives a subagent's chain no Title and no Memory", () => {
    const names = buildMiddlewares({ appConfig: parseAppConfig({}), subagent: true }).map((m) => m.name);
    expect(names).not.toContain("TitleMiddleware");
    expect(names).not.toContain("MemoryMiddleware");
    expect(names.at(-1)).toBe("ClarificationMiddleware");
  });

  it("rejects an explicit empty safety detector list", () => {
    expect(() => buildMiddlewares({ appConfig: parseAppConfig({ safety_finish_reason: { detectors: [] } }) })).toThrow("must not be an empty list");
  });

  it("leaves MemoryMiddleware out in memory tool mode, and Summarization out without a summary model", () => {
    const appConfig = parseAppConfig({ memory: { mode: "tool" }, summarization: { enabled: true } });
    const names = buildMiddlewares({ appConfig }).map((m) => m.name);
    expect(names).not.toContain("MemoryMiddleware");
    expect(names).not.toContain("SummarizationMiddleware");
  });

  it("builds LoopDetection from the loop_detection section (AF-037)", () => {
    const appConfig = parseAppConfig({
      loop_detection: { warn_threshold: 7, hard_limit: 9, window_size: 30, max_tracked_threads: 40, tool_freq_warn: 50, tool_freq_hard_limit: 60 },
    });
    const loop = buildMiddlewares({ appConfig }).find((m) => m instanceof LoopDetectionMiddleware) as LoopDetectionMiddleware;
    expect(loop.config).toMatchObject({ warn_threshold: 7, hard_limit: 9, window_size: 30, max_tracked_threads: 40, tool_freq_warn: 50, tool_freq_hard_limit: 60 });
  });

  it("omits LoopDetection when loop_detection.enabled is false", () => {
    const chain = buildMiddlewares({ appConfig: parseAppConfig({ loop_detection: { enabled: false } }) });
    expect(chain.map((m) => m.name)).not.toContain("LoopDetectionMiddleware");
    expect(chain.at(-1)?.name).toBe("ClarificationMiddleware");
  });
});
