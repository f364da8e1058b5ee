import type { ModelRequest } from "langchain";
import { describe, expect, it } from "vitest";
import { buildMiddlewares } from "../../../src/agents/lead-agent/middlewares.js";
import { DeerflowMiddleware } from "../../../src/agents/middlewares/base.js";
import { LoopDetectionMiddleware } from "../../../src/agents/middlewares/loop-detection.js";
import { parseAppConfig } from "../../../src/config/schema.js";

class Custom extends DeerflowMiddleware {
  name = "Custom";
  wrapModelCall(req: ModelRequest, h: (r: ModelRequest) => unknown) {
    return h(req) as never;
  }
}

describe("buildMiddlewares: app-layer chain (agent-factory.md §2.10)", () => {
  it("keeps the seed order with Clarification last and custom middlewares just before it", () => {
    const chain = buildMiddlewares({ appConfig: parseAppConfig({}), custom: [new Custom()] });
    expect(chain.map((m) => m.name)).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware",
      "TitleMiddleware", "MemoryMiddleware", "LoopDetectionMiddleware", "Custom", "ClarificationMiddleware",
    ]);
  });

  it("adds the optional slots in DeerFlow's order: Summarization, Todo, ViewImage, TokenBudget", async () => {
    const { ScriptedChatModel } = await import("../../../src/models/scripted-chat-model.js");
    const appConfig = parseAppConfig({ summarization: { enabled: true }, token_budget: { enabled: true } });
    const chain = buildMiddlewares({ appConfig, isPlanMode: true, supportsVision: true, summaryModel: new ScriptedChatModel() });
    expect(chain.map((m) => m.name)).toEqual([
      "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "DanglingToolCallMiddleware", "ToolErrorHandlingMiddleware",
      "SummarizationMiddleware", "TodoMiddleware", "TitleMiddleware", "MemoryMiddleware", "ViewImageMiddleware", "LoopDetectionMiddleware",
      "TokenBudgetMiddleware", "ClarificationMiddleware",
    ]);
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
