import { AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { resolveSafetyDetectors, SafetyFinishReasonMiddleware } from "../../../src/agents/middlewares/safety-finish-reason.js";

const call = (name: string, id: string) => ({ name, args: {}, id, type: "tool_call" as const });
const filtered = (content: string, calls: ReturnType<typeof call>[] = [], metadata: Record<string, unknown> = { finish_reason: "content_filter" }) =>
  new AIMessage({ id: "ai-1", content, tool_calls: calls, response_metadata: metadata, additional_kwargs: calls.length ? { tool_calls: [{ id: calls[0].id, type: "function" as const, function: { name: calls[0].name, arguments: "{}" } }] } : {} });

describe("SafetyFinishReasonMiddleware (agent-factory.md §6.19, AF-066)", () => {
  const mw = new SafetyFinishReasonMiddleware();

  it("clears tool calls of a content-filtered response and records why (a)", () => {
    const context: Record<string, unknown> = {};
    const events: unknown[] = [];
    const out = mw.apply(filtered("partial", [call("write_file", "c1")]), { context, writer: (e) => events.push(e) });
    expect(out.tool_calls).toEqual([]);
    expect(out.additional_kwargs.tool_calls).toBeUndefined();
    expect(out.id).toBe("ai-1");
    expect(String(out.content)).toContain("were suppressed");
    expect(out.response_metadata.finish_reason).toBe("content_filter");
    expect(out.additional_kwargs.safety_termination).toMatchObject({
      detector: "OpenAICompatibleContentFilterDetector", reason_field: "finish_reason", reason_value: "content_filter",
      suppressed_tool_call_count: 1, suppressed_tool_call_names: ["write_file"],
    });
    expect(context.stop_reason).toBe("safety_capped");
    expect(events).toEqual([expect.objectContaining({ type: "safety_termination", suppressed_tool_call_count: 1 })]);
  });

  it("leaves visible text without tool calls alone (b) and normal tool calls alone (d)", () => {
    const text = filtered("partial response");
    expect(mw.apply(text)).toBe(text);
    const normal = filtered("", [call("bash", "c2")], { finish_reason: "tool_calls" });
    expect(mw.apply(normal)).toBe(normal);
  });

  it("backfills a blank filtered answer (c)", () => {
    const out = mw.apply(filtered(""));
    expect(String(out.content)).toContain("safety-related signal");
    expect(String(out.content)).toContain("returned no content");
    expect(String(out.content)).not.toContain("were suppressed");
    expect((out.additional_kwargs.safety_termination as { suppressed_tool_call_count: number }).suppressed_tool_call_count).toBe(0);
  });

  it("recognises Anthropic refusals and Gemini safety reasons, in additional_kwargs too", () => {
    expect(mw.detect(new AIMessage({ content: "", response_metadata: { stop_reason: "refusal" } }))?.detector).toBe("AnthropicRefusalDetector");
    expect(mw.detect(new AIMessage({ content: "", additional_kwargs: { finish_reason: "SAFETY" } }))?.detector).toBe("GeminiSafetyDetector");
    expect(mw.detect(new AIMessage({ content: "", response_metadata: { finish_reason: "stop" } }))).toBeNull();
  });

  it("validates the detector list: null built-ins, [] rejected, unknown names a TypeError", () => {
    expect(resolveSafetyDetectors(null)).toHaveLength(3);
    expect(() => resolveSafetyDetectors([])).toThrow("must not be an empty list");
    expect(() => resolveSafetyDetectors([{ use: "my.module:NotADetector" }])).toThrow(TypeError);
    expect(resolveSafetyDetectors([{ use: "deerflow.x:AnthropicRefusalDetector" }]).map((d) => d.name)).toEqual(["AnthropicRefusalDetector"]);
  });
});
