// The run journal's middleware events (DeerFlow RunJournal.record_middleware): a middleware reports its decision
// through the run context's `__run_journal`; the journal stores it as `middleware:{tag}` in the run's event log.
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import { LoopDetectionMiddleware } from "../../src/agents/middlewares/loop-detection.js";
import { RUN_JOURNAL_KEY } from "../../src/agents/run-journal-sink.js";
import { SqliteRunEventStore } from "../../src/runtime/persistence/sqlite/run-event-store.js";
import { RunEventLog } from "../../src/runtime/stream/run-event-log.js";
import { RunJournal } from "../../src/runtime/stream/run-journal.js";

let n = 0;
const ls = () => new AIMessage({ id: `ai-${++n}`, content: "", tool_calls: [{ name: "bash", args: { command: "ls" }, id: `c${n}`, type: "tool_call" }] });

describe("RunJournal: middleware decisions", () => {
  it("stores the loop detector's warning and forced stop as middleware:loop_detection, in run order", async () => {
    const log = new RunEventLog(new SqliteRunEventStore(new Database(":memory:")));
    const journal = new RunJournal(log, { runId: "run-1", threadId: "t-1", assistantId: "lead_agent", attempt: 1 });
    const context: Record<string, unknown> = { thread_id: "t-1", run_id: "run-1", [RUN_JOURNAL_KEY]: journal };
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 4 });
    journal.start();
    const messages = [new HumanMessage("go")];
    for (let i = 0; i < 4; i++) await mw.wrapModelCall({ messages, runtime: { context }, state: { messages } } as never, vi.fn(async () => ls()) as never);
    journal.end("success", undefined, { total_tokens: 0 });
    log.finish("run-1");
    await log.drain();

    const events = await log.list("run-1");
    expect(events.map((e) => e.event_type)).toEqual(["run.start", "middleware:loop_detection", "middleware:loop_detection", "run.end"]);
    expect(events[1]).toMatchObject({ category: "middleware", content: { name: "LoopDetectionMiddleware", hook: "wrap_model_call", action: "inject_warning", changes: { warnings: [expect.stringContaining("[LOOP DETECTED]")] } } });
    expect(events[2].content).toMatchObject({ action: "force_stop", changes: { stop_reason: "loop_capped", suppressed_tool_call_names: ["bash"], message: expect.stringContaining("[FORCED STOP]") } });
    expect(events[3]).toMatchObject({ category: "outputs", content: { status: "success", usage: { total_tokens: 0 } } });
  });

  it("records nothing, and never throws, for a run without a journal (an embedded agent)", async () => {
    const mw = new LoopDetectionMiddleware({ warn_threshold: 2, hard_limit: 3 });
    const context = { thread_id: "t-2", run_id: "run-2", [RUN_JOURNAL_KEY]: { recordMiddleware: () => { throw new Error("disk full"); } } };
    const messages = [new HumanMessage("go")];
    for (let i = 0; i < 3; i++) await mw.wrapModelCall({ messages, runtime: { context }, state: { messages } } as never, vi.fn(async () => ls()) as never);
    const result = (await mw.wrapModelCall({ messages, runtime: { context: { run_id: "run-3" } }, state: { messages } } as never, vi.fn(async () => ls()) as never)) as unknown as AIMessage;
    expect(result.tool_calls).toHaveLength(1);
  });

  it("records a cancelled run as run.cancel and a failure as run.error with its type", async () => {
    const log = new RunEventLog(new SqliteRunEventStore(new Database(":memory:")));
    new RunJournal(log, { runId: "c", threadId: "t", assistantId: "a", attempt: 2 }).end("interrupted", undefined, { total_tokens: 5 });
    new RunJournal(log, { runId: "e", threadId: "t", assistantId: "a", attempt: 1 }).end("error", "boom", { total_tokens: 1 }, "ProviderError");
    expect(await log.list("c")).toMatchObject([{ event_type: "run.cancel", category: "trace", content: { status: "interrupted", usage: { total_tokens: 5 } } }]);
    expect(await log.list("e")).toMatchObject([{ event_type: "run.error", category: "error", content: "boom", metadata: { status: "error", error_type: "ProviderError" } }]);
  });
});
