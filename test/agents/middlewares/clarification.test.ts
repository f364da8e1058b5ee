import { ToolMessage } from "@langchain/core/messages";
import { describe, expect, it, vi } from "vitest";
import { ClarificationMiddleware, formatClarification, normalizeOptions } from "../../../src/agents/middlewares/clarification.js";

type Req = Parameters<ClarificationMiddleware["wrapToolCall"]>[0];
type Handler = Parameters<ClarificationMiddleware["wrapToolCall"]>[1];
const request = (name: string, args: Record<string, unknown>, id?: string, context: Record<string, unknown> = {}) =>
  ({ toolCall: { name, args, id, type: "tool_call" }, runtime: { context }, state: { messages: [] } }) as unknown as Req;

const clarify = (args: Record<string, unknown>) => formatClarification(args, normalizeOptions(args.options));

describe("ClarificationMiddleware.wrapToolCall (agent-factory.md §6.20, AF-067)", () => {
  const args = { question: "Which environment should I use?", clarification_type: "approach_choice", options: ["dev", "prod"] };

  it("answers ask_clarification itself with a stable id, the formatted question and a human_input artifact", async () => {
    const mw = new ClarificationMiddleware();
    const handler = vi.fn();
    const first = (await mw.wrapToolCall(request("ask_clarification", args, "call-clarify-1"), handler as unknown as Handler)) as ToolMessage;
    const second = (await mw.wrapToolCall(request("ask_clarification", args, "call-clarify-1"), handler as unknown as Handler)) as ToolMessage;
    expect(handler).not.toHaveBeenCalled();
    expect(ToolMessage.isInstance(first)).toBe(true);
    expect(first.id).toBe("clarification:call-clarify-1");
    expect(second.id).toBe(first.id);
    expect(first.tool_call_id).toBe("call-clarify-1");
    expect(first.name).toBe("ask_clarification");
    expect(first.content).toBe("🔀 Which environment should I use?\n  1. dev\n  2. prod");
    expect(first.artifact).toEqual({
      human_input: {
        version: 1,
        kind: "human_input_request",
        source: "ask_clarification",
        input_mode: "choice_with_other",
        request_id: "clarification:call-clarify-1",
        clarification_type: "approach_choice",
        question: "Which environment should I use?",
        tool_call_id: "call-clarify-1",
        options: [
          { id: "option-1", label: "dev", value: "dev" },
          { id: "option-2", label: "prod", value: "prod" },
        ],
      },
    });
  });

  it("uses a content hash for the id when the call has none, stable across retries", async () => {
    const mw = new ClarificationMiddleware();
    const a = (await mw.wrapToolCall(request("ask_clarification", { question: "Q?" }), vi.fn() as unknown as Handler)) as ToolMessage;
    const b = (await mw.wrapToolCall(request("ask_clarification", { question: "Q?" }), vi.fn() as unknown as Handler)) as ToolMessage;
    expect(a.id).toMatch(/^clarification:[0-9a-f]{16}$/);
    expect(b.id).toBe(a.id);
    const payload = (a.artifact as { human_input: Record<string, unknown> }).human_input;
    expect(payload.request_id).toBe(a.id);
    expect(payload.input_mode).toBe("free_text");
    expect(payload).not.toHaveProperty("tool_call_id");
    expect(payload).not.toHaveProperty("options");
  });

  it("keeps context in the payload when the key is present", async () => {
    const out = (await new ClarificationMiddleware().wrapToolCall(
      request("ask_clarification", { question: "Q?", context: "Need target env" }, "c1"),
      vi.fn() as unknown as Handler,
    )) as ToolMessage;
    expect((out.artifact as { human_input: Record<string, unknown> }).human_input.context).toBe("Need target env");
  });

  it("tells the model to proceed, without an artifact, when clarification is disabled", async () => {
    const handler = vi.fn();
    const out = (await new ClarificationMiddleware().wrapToolCall(
      request("ask_clarification", args, "call-clarify-1", { disable_clarification: true }),
      handler as unknown as Handler,
    )) as ToolMessage;
    expect(handler).not.toHaveBeenCalled();
    expect(out.id).toBe("clarification:call-clarify-1");
    expect(out.name).toBe("ask_clarification");
    expect(String(out.content)).toContain("disabled");
    expect(String(out.content).toLowerCase()).toContain("proceed");
    expect(out.artifact).toBeUndefined();
  });

  it("passes other tools to the handler, also when clarification is disabled", async () => {
    const result = new ToolMessage({ content: "ok", tool_call_id: "b1", name: "bash" });
    const handler = vi.fn(async () => result);
    const req = request("bash", { command: "ls" }, "b1", { disable_clarification: true });
    expect(await new ClarificationMiddleware().wrapToolCall(req, handler as unknown as Handler)).toBe(result);
    expect(handler).toHaveBeenCalledWith(req);
  });
});

describe("formatClarification (AF-068)", () => {
  it.each([
    ["missing_info", "❓"],
    ["ambiguous_requirement", "🤔"],
    ["approach_choice", "🔀"],
    ["risk_confirmation", "⚠️"],
    ["suggestion", "💡"],
    ["something_else", "❓"],
  ])("prefixes the %s question with %s", (type, icon) => {
    expect(clarify({ question: "Q?", clarification_type: type })).toBe(`${icon} Q?`);
  });

  it("defaults to the missing_info icon", () => {
    expect(clarify({ question: "Q?" })).toBe("❓ Q?");
  });

  it("puts the context first, then the question", () => {
    expect(clarify({ question: "Which env?", context: "Need target env for config" })).toBe("❓ Need target env for config\nWhich env?");
  });

  it("numbers the options of a JSON-string array", () => {
    const text = clarify({ question: "Q?", options: '["dev","staging","prod"]' });
    expect(text).toContain("  1. dev\n  2. staging\n  3. prod");
    expect(text).not.toContain("1. [");
  });

  it("treats a JSON-string scalar as a single option without quotes", () => {
    const text = clarify({ question: "Q?", options: '"development"' });
    expect(text).toBe("❓ Q?\n  1. development");
  });

  it("renders mixed-type options as strings and drops null (JS rendering of true)", () => {
    expect(clarify({ question: "Q?", options: '["Option A", 2, true, null]' })).toBe("❓ Q?\n  1. Option A\n  2. 2\n  3. true");
  });
});

describe("normalizeOptions", () => {
  it("treats a non-JSON string as one option", () => {
    expect(normalizeOptions("dev or prod")).toEqual([{ id: "option-1", label: "dev or prod", value: "dev or prod" }]);
  });

  it("strips XML-like tags, trims, drops blanks and duplicates", () => {
    expect(normalizeOptions(["<b>dev</b>", "  dev ", "", "   ", "prod"]).map((o) => o.label)).toEqual(["dev", "prod"]);
  });

  it("takes label and value from object items", () => {
    expect(normalizeOptions([{ label: "Development", value: "dev" }, { text: "Prod" }])).toEqual([
      { id: "option-1", label: "Development", value: "dev" },
      { id: "option-2", label: "Prod", value: "Prod" },
    ]);
  });

  it("flattens the scalar leaves of a mapping in source order", () => {
    expect(normalizeOptions({ option: ["a", { nested: "b" }], other: 3 }).map((o) => o.label)).toEqual(["a", "b", "3"]);
  });

  it("gives no options for null, undefined or JSON null", () => {
    expect(normalizeOptions(null)).toEqual([]);
    expect(normalizeOptions(undefined)).toEqual([]);
    expect(normalizeOptions("null")).toEqual([]);
  });
});
