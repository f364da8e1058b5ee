import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { RunStore } from "../../src/runtime/persistence/sqlite/run-store.js";

describe("RunStore (SQLite) counters", () => {
  it("adds the counters column to a database made before it existed; older rows read as all zero", async () => {
    const db = new Database(":memory:");
    db.exec(`CREATE TABLE runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL, status TEXT NOT NULL,
      metadata TEXT NOT NULL, kwargs TEXT NOT NULL, multitask_strategy TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT)`);
    db.prepare("INSERT INTO runs VALUES ('old', 't', 'lead_agent', 'success', '{}', '{}', 'reject', 'x', 'x', NULL)").run();
    const store = new RunStore(db);
    expect(await store.get("old")).toMatchObject({ run_id: "old", total_tokens: 0, llm_call_count: 0, stop_reason: null });
    const base = { thread_id: "t", assistant_id: "lead_agent", status: "success" as const, metadata: {}, kwargs: { input: null, config: {} }, multitask_strategy: "reject" as const, created_at: "y", updated_at: "y" };
    await store.save({ ...base, run_id: "new", total_tokens: 36, lead_agent_tokens: 18, middleware_tokens: 18, stop_reason: "token_capped" });
    expect(await store.get("new")).toMatchObject({ total_tokens: 36, lead_agent_tokens: 18, middleware_tokens: 18, stop_reason: "token_capped", message_count: 0 });
    // Opening the store again leaves the migrated table as it is.
    new RunStore(db);
    expect(await store.get("new")).toMatchObject({ total_tokens: 36 });
  });

  it("writes a run's kwargs with the row and keeps them through status updates", async () => {
    const store = new RunStore(new Database(":memory:"));
    const record = { run_id: "r", thread_id: "t", assistant_id: "lead_agent", status: "pending" as const, metadata: {}, kwargs: { input: { messages: [{ role: "user", content: "hi" }] }, config: { recursion_limit: 100 } }, multitask_strategy: "reject" as const, created_at: "a", updated_at: "a" };
    await store.save(record);
    await store.save({ ...record, status: "running", metadata: { model_name: "m" }, updated_at: "b" });
    await store.save({ ...record, status: "success", kwargs: { input: "changed", config: {} }, updated_at: "c", error: undefined });
    expect(await store.get("r")).toMatchObject({ status: "success", metadata: {}, updated_at: "c", kwargs: { input: { messages: [{ role: "user", content: "hi" }] }, config: { recursion_limit: 100 } } });
  });
});
