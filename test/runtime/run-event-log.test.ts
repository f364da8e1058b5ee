import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RunEventLog } from "../../src/runtime/stream/run-event-log.js";

let home: string;
let dir: string;
beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "run-events-"));
  dir = path.join(home, "data", "run-events");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe("RunEventLog", () => {
  it("keeps a finished run's events in one database, across a reopen, without a file per run", () => {
    const log = new RunEventLog(dir);
    log.record("run-1", "metadata", { run_id: "run-1" });
    log.record("run-1", "values", { messages: [] });
    log.record("run-1", "messages", [{ content: "tok" }]);
    log.record("run-1", "updates", { model_request: { n: 1 } });
    log.record("run-1", "custom", { task_id: "t1", type: "progress" });
    log.record("run-1", "error", { message: "boom" });
    // Buffered rows are listed before they are written.
    expect(log.list("run-1").map((e) => e.event_type)).toEqual(["metadata", "updates", "custom", "error"]);
    log.finish("run-1");
    log.close();
    expect(existsSync(`${dir}.sqlite`)).toBe(true);
    expect(existsSync(dir)).toBe(false);

    const reopened = new RunEventLog(dir);
    const events = reopened.list("run-1");
    expect(events.map((e) => [e.seq, e.event_type, e.category])).toEqual([
      [1, "metadata", "lifecycle"],
      [2, "updates", "update"],
      [3, "custom", "custom"],
      [4, "error", "error"],
    ]);
    expect(events[1].content).toEqual({ model_request: { n: 1 } });
    expect(events[0].created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(reopened.list("run-1", { eventTypes: ["custom"] }).map((e) => e.seq)).toEqual([3]);
    expect(reopened.list("run-1", { afterSeq: 2, limit: 1 }).map((e) => e.seq)).toEqual([3]);
    expect(reopened.list("run-1", { taskId: "t1" }).map((e) => e.seq)).toEqual([3]);
    expect(reopened.list("other")).toEqual([]);
    expect(reopened.list("../escape")).toEqual([]);
    reopened.remove(["run-1"]);
    expect(reopened.list("run-1")).toEqual([]);
    reopened.close();
  });

  it("writes a long run's events as they accumulate, and numbers them in publication order", () => {
    const log = new RunEventLog(dir);
    for (let i = 0; i < 150; i++) log.record("long", "custom", { i });
    const fresh = new RunEventLog(dir);
    // 128 of 150 rows were written in two batches of 64 before the run ended.
    expect(fresh.list("long")).toHaveLength(128);
    log.finish("long");
    expect(fresh.list("long").map((e) => (e.content as { i: number }).i)).toEqual([...Array(150).keys()]);
    log.close();
    fresh.close();
  });

  it("still reads the JSON Lines file an earlier version wrote for a run", () => {
    mkdirSync(dir, { recursive: true });
    const row = { seq: 1, run_id: "old-run", event_type: "metadata", category: "lifecycle", content: { a: 1 }, metadata: {}, created_at: "2026-01-01T00:00:00.000Z" };
    writeFileSync(path.join(dir, "old-run.jsonl"), `${JSON.stringify(row)}\n{"torn`);
    const log = new RunEventLog(dir);
    expect(log.list("old-run")).toEqual([row]);
    log.remove(["old-run"]);
    expect(readdirSync(dir)).toEqual([]);
    log.close();
  });
});

describe("RunEventLog: DeerFlow's subagent catalog events", () => {
  it("stores subagent.start/step/end beside the task_* custom chunks, in one batch, and filters steps by task", () => {
    const dir = path.join(mkdtempSync(path.join(tmpdir(), "run-events-")), "run-events");
    const log = new RunEventLog(dir);
    log.record("r", "custom", { type: "task_started", task_id: "t1", description: "look" });
    log.record("r", "custom", { type: "task_running", task_id: "t1", message_index: 0, message: { type: "ai", content: "x".repeat(9000), tool_calls: [{ name: "bash", args: { command: "y".repeat(9000) } }] } });
    log.record("r", "custom", { type: "task_running", task_id: "t1", message_index: -1, message: { type: "ai" } });
    log.record("r", "custom", { type: "task_completed", task_id: "t1", result: "done", usage: { total_tokens: 3 } });
    log.finish("r");
    const steps = log.list("r", { eventTypes: ["subagent.step"], taskId: "t1" });
    expect(steps).toHaveLength(1);
    expect(steps[0].content).toMatchObject({ task_id: "t1", message_index: 0, kind: "ai", truncated: true, tool_calls: [{ name: "bash", args_truncated: true }] });
    expect((steps[0].content as any).text).toHaveLength(8192);
    expect(log.list("r", { eventTypes: ["subagent.end"] })[0].content).toEqual({ task_id: "t1", status: "completed", usage: { total_tokens: 3 }, result: "done" });
    expect(log.list("r", { eventTypes: ["subagent.start"] })[0].content).toEqual({ task_id: "t1", description: "look" });
    log.close();
  });
});
