import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createDeerflowAgent } from "../../../src/agents/factory.js";
import { DeerMemManager } from "../../../src/agents/memory/deermem-manager.js";
import { parseAppConfig } from "../../../src/config/schema.js";
import { DynamicContextMiddleware, formatReminderDate, renderMemory } from "../../../src/agents/middlewares/dynamic-context.js";
import { SystemMessageCoalescingMiddleware } from "../../../src/agents/middlewares/system-message-coalescing.js";
import { FakeChatModel } from "../../support/fake-chat-model.js";

const FRIDAY = new Date(2026, 4, 8, 10, 0, 0);
const SATURDAY = new Date(2026, 4, 9, 0, 5, 0);
const home = mkdtempSync(path.join(tmpdir(), "dyn-ctx-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const manager = new DeerMemManager({ backendConfig: {}, mode: "middleware", getAppConfig: () => parseAppConfig({}), home });

/** Runs one wrapModelCall and returns what the handler received. */
async function send(mw: { wrapModelCall: Function }, messages: BaseMessage[], extra: Record<string, unknown> = {}) {
  let seen: { messages: BaseMessage[]; systemMessage?: SystemMessage } = { messages: [] };
  await mw.wrapModelCall({ messages, systemMessage: new SystemMessage("BASE"), runtime: { context: { thread_id: "t1", run_id: "r1", user_id: "u1" } }, ...extra }, async (r: typeof seen) => {
    seen = r;
    return new AIMessage("ok");
  });
  return seen;
}

describe("DynamicContextMiddleware (agent-factory.md §6.14, AF-062 adapted to wrapModelCall)", () => {
  it("formats the date as YYYY-MM-DD, Weekday", () => {
    expect(formatReminderDate(FRIDAY)).toBe("2026-05-08, Friday");
  });

  it("inserts a date reminder (and the user's memory) before the latest user message, leaving the user text untouched", async () => {
    await manager.createFact({ userId: "u1", agentName: "default" }, { content: "User prefers Python.", category: "preference", confidence: 0.9 });
    const mw = new DynamicContextMiddleware({ manager, now: () => FRIDAY });
    const hi = new HumanMessage({ content: "Hi", id: "msg-1" });
    const { messages } = await send(mw, [hi]);
    expect(messages).toHaveLength(3);
    const [reminder, memory, user] = messages;
    expect(SystemMessage.isInstance(reminder)).toBe(true);
    expect(reminder.content).toBe("<system-reminder>\n<current_date>2026-05-08, Friday</current_date>\n</system-reminder>");
    expect(reminder.additional_kwargs).toMatchObject({ hide_from_ui: true, dynamic_context_reminder: true, reminder_date: "2026-05-08, Friday" });
    expect(HumanMessage.isInstance(memory)).toBe(true);
    expect(String(memory.content)).toBe("<system-reminder>\n<memory>\nFacts:\n- [preference | 0.90] User prefers Python.\n</memory>\n</system-reminder>");
    expect(memory.additional_kwargs.hide_from_ui).toBe(true);
    expect(user).toBe(hi);
  });

  it("shows the new date after midnight and only the date when memory is empty or off", async () => {
    const mw = new DynamicContextMiddleware({ manager, now: () => SATURDAY, memoryConfig: { injection_enabled: false } });
    const history = [new HumanMessage({ content: "Hi", id: "m1" }), new AIMessage("Hello"), new HumanMessage({ content: "Good morning", id: "m2" })];
    const { messages } = await send(mw, history);
    expect(messages.map((m) => m.getType())).toEqual(["human", "ai", "system", "human"]);
    expect(String(messages[2].content)).toContain("<current_date>2026-05-09, Saturday</current_date>");
    expect(messages[3].id).toBe("m2");
  });

  it("does not inject twice when the request already carries a reminder", async () => {
    const mw = new DynamicContextMiddleware({ now: () => FRIDAY, memoryConfig: { enabled: false } });
    const existing = new SystemMessage({ content: "<system-reminder>x</system-reminder>", additional_kwargs: { dynamic_context_reminder: true } });
    expect((await send(mw, [existing, new HumanMessage("Hi")])).messages).toHaveLength(2);
  });

  it("wraps a backend's memory text in <memory> (nothing for empty text)", () => {
    expect(renderMemory("Facts:\n- [context | 0.90] x")).toBe("<memory>\nFacts:\n- [context | 0.90] x\n</memory>");
    expect(renderMemory("  ")).toBeNull();
  });
});

describe("SystemMessageCoalescingMiddleware (§6.18)", () => {
  const mw = new SystemMessageCoalescingMiddleware();

  it("passes a request without in-list system messages through unchanged", async () => {
    const messages = [new HumanMessage("hi")];
    const seen = await send(mw, messages);
    expect(seen.messages).toBe(messages);
    expect(seen.systemMessage?.content).toBe("BASE");
  });

  it("merges the system prompt and every in-list system message, keeping only the last date reminder", async () => {
    const r1 = new SystemMessage({ content: "<r>old</r>", id: "s1", additional_kwargs: { dynamic_context_reminder: true, a: 1 } });
    const other = new SystemMessage({ content: [{ type: "text", text: "OTHER" }], additional_kwargs: { b: 2 } });
    const r2 = new SystemMessage({ content: "<r>new</r>", additional_kwargs: { dynamic_context_reminder: true, a: 3 } });
    const human = new HumanMessage("hi");
    const seen = await send(mw, [r1, human, other, r2]);
    expect(seen.messages).toEqual([human]);
    expect(seen.systemMessage?.content).toBe("BASE\n\nOTHER\n\n<r>new</r>");
    expect(seen.systemMessage?.additional_kwargs).toMatchObject({ b: 2, a: 3, dynamic_context_reminder: true });
  });
});

describe("DynamicContext + SystemMessageCoalescing in an agent", () => {
  it("sends the date at the end of the system prompt and keeps the history clean", async () => {
    const model = new FakeChatModel(["answer"]);
    const agent = createDeerflowAgent(model, [], {
      middleware: [new DynamicContextMiddleware({ now: () => FRIDAY, memoryConfig: { enabled: false } }), new SystemMessageCoalescingMiddleware()],
      systemPrompt: "STATIC PROMPT",
    });
    const out = (await agent.invoke({ messages: [new HumanMessage("Hi")] } as never, { context: { thread_id: "t" } } as never)) as unknown as { messages: BaseMessage[] };
    const sent = model.calls[0];
    expect(sent.map((m) => m.getType())).toEqual(["system", "human"]);
    expect(sent[0].content).toBe("STATIC PROMPT\n\n<system-reminder>\n<current_date>2026-05-08, Friday</current_date>\n</system-reminder>");
    expect(out.messages.map((m) => m.getType())).toEqual(["human", "ai"]);
  });
});
