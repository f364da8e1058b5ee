import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contractBackend } from "../support/contract-backend.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";
import { parseSse } from "../support/sse.js";
import { until } from "../support/wait.js";

// The LangGraph SDK client against the gateway: every call of the SDK client the gateway serves, with the offline
// scripted model (`scripted`: instant; `slow`: 150 ms per token, for runs that must still be in flight).
const CONFIG = `models:
  - name: scripted
    use: deerflow-gateway:ScriptedChatModel
    model: s
  - name: slow
    use: deerflow-gateway:ScriptedChatModel
    model: slow
    token_delay_ms: 150
`;
let h: Harness;
let c: Client;
beforeAll(async () => {
  h = await startHarness(CONFIG + contractBackend(), { heartbeatMs: 200 });
  c = new Client({ apiUrl: h.url, apiKey: null, callerOptions: { maxRetries: 0 } });
});
afterAll(async () => h.close());

const human = (content: string) => ({ messages: [{ type: "human", content }] });
const slowInput = () => human(Array.from({ length: 30 }, (_, i) => `w${i}`).join(" "));
const slowContext = { model_name: "slow" };
const uuid = () => crypto.randomUUID();
async function drain(it: AsyncIterable<unknown>): Promise<any[]> {
  const parts: any[] = [];
  for await (const p of it) parts.push(p);
  return parts;
}

describe("assistants", () => {
  it("lists lead_agent and gets it; an unknown assistant is 404", async () => {
    const list = await c.assistants.search({ limit: 10 });
    expect(list[0]).toMatchObject({ assistant_id: "lead_agent", graph_id: "lead_agent", name: "lead_agent", version: 1, config: {}, metadata: { created_by: "system" } });
    expect(await c.assistants.get("lead_agent")).toMatchObject({ assistant_id: "lead_agent" });
    await expect(c.assistants.get("ghost")).rejects.toMatchObject({ status: 404 });
    const schemas = await (await fetch(`${h.url}/assistants/lead_agent/schemas`)).json();
    expect(Object.keys(schemas)).toEqual(expect.arrayContaining(["graph_id", "input_schema", "output_schema", "state_schema", "config_schema"]));
    expect(await (await fetch(`${h.url}/assistants/lead_agent/graph`)).json()).toEqual({ graph_id: "lead_agent", nodes: [], edges: [] });
    expect((await (await fetch(`${h.url}/assistants/ghost/graph`)).json()).detail).toBe("Assistant ghost not found");
  });
});

describe("a thread's life through the SDK", () => {
  /** Each case's own thread, with one finished run ("hi" -> "You said: hi"): no case leans on another's. */
  async function threadWithRun(): Promise<{ T: string; runId: string }> {
    const T = uuid();
    await c.threads.create({ threadId: T });
    let runId = "";
    await drain(c.runs.stream(T, "lead_agent", { input: human("hi"), onRunCreated: (m) => (runId = m.run_id) }));
    return { T, runId };
  }

  it("creates threads (idempotent with an id) and 404s an unknown one", async () => {
    const T = uuid();
    const t = await c.threads.create();
    expect(t).toMatchObject({ status: "idle", metadata: {}, values: {} });
    expect(typeof t.thread_id).toBe("string");
    expect((await c.threads.create({ threadId: T })).thread_id).toBe(T);
    expect((await c.threads.create({ threadId: T })).thread_id).toBe(T);
    expect((await c.threads.get(T)).thread_id).toBe(T);
    await expect(c.threads.get(uuid())).rejects.toMatchObject({ status: 404 });
  });

  it("streams a run: metadata first, message tuples with ids, final values, end", async () => {
    const T = (await c.threads.create()).thread_id;
    let meta: { run_id: string; thread_id?: string } | undefined;
    const parts = await drain(c.runs.stream(T, "lead_agent", { input: human("hi"), streamMode: ["values", "messages-tuple", "updates"], onRunCreated: (m) => (meta = m) }));
    expect(parts[0].event).toBe("metadata");
    expect(parts[0].data.run_id).toBe(meta!.run_id);
    expect(meta!.thread_id).toBe(T);
    const tuple = parts.find((p) => p.event === "messages");
    expect(Array.isArray(tuple.data) && tuple.data.length === 2 && typeof tuple.data[0].type === "string" && tuple.data[0].id).toBeTruthy();
    expect(parts.filter((p) => p.event === "values").at(-1).data.messages.at(-1)).toMatchObject({ type: "ai", content: "You said: hi" });
    expect(parts.some((p) => p.event === "error")).toBe(false);
    expect(parts.at(-1).event).toBe("end");
  });

  it("gets and lists the run", async () => {
    const { T, runId } = await threadWithRun();
    expect((await c.runs.get(T, runId)).status).toBe("success");
    const list = await c.runs.list(T);
    expect(list[0].run_id).toBe(runId);
    expect(Object.keys(list[0])).toEqual(expect.arrayContaining(["run_id", "thread_id", "assistant_id", "status", "metadata", "kwargs", "multitask_strategy", "created_at", "updated_at"]));
  });

  it("reads state, history and updates the title", async () => {
    const { T } = await threadWithRun();
    const state = await c.threads.getState<{ messages: any[] }>(T);
    expect(state.values.messages).toHaveLength(2);
    expect(state.values.messages.at(-1).type).toBe("ai");
    expect(Array.isArray(state.next)).toBe(true);
    expect(state.checkpoint).toMatchObject({ thread_id: T, checkpoint_ns: "" });
    const history = await c.threads.getHistory(T, { limit: 1 });
    expect(history).toHaveLength(1);
    expect((history[0].values as any).messages).toHaveLength(2);
    const updated = await c.threads.updateState(T, { values: { title: "Renamed" } });
    expect(updated).toBeTruthy();
    const after = await c.threads.getState<{ title: string; messages: any[] }>(T);
    expect(after.values.title).toBe("Renamed");
    expect(after.values.messages).toHaveLength(2);
    expect(after.next).toEqual([]);
    await expect(c.threads.updateState(T, { values: { not_a_channel: 1 } })).rejects.toMatchObject({ status: 422 });
  });

  it("finds the thread by search, with only the title in values", async () => {
    const { T } = await threadWithRun();
    await c.threads.updateState(T, { values: { title: "Renamed" } });
    const found = await c.threads.search({ limit: 50 });
    const mine = found.find((t) => t.thread_id === T)!;
    expect(mine.values).toEqual({ title: "Renamed" });
    // An agent name no other case (or earlier run of this one) uses, so the search can only find this thread.
    const agent = `x-${uuid()}`;
    await c.threads.update(T, { metadata: { agent_name: agent } });
    expect((await c.threads.search({ metadata: { agent_name: agent } })).map((t) => t.thread_id)).toEqual([T]);
    expect((await postJson(`${h.url}/threads/search`, { limit: 0 })).status).toBe(422);
  });

  it("waits for a run and returns the final values", async () => {
    const { T } = await threadWithRun();
    const values = (await c.runs.wait(T, "lead_agent", { input: human("again") })) as { messages: any[] };
    expect(values.messages).toHaveLength(4);
    expect(values.messages.at(-1).content).toBe("You said: again");
  });

  it("joins a finished run's stream without hanging, and joins a background run as JSON", async () => {
    const { T, runId } = await threadWithRun();
    const replay = await drain(c.runs.joinStream(T, runId, { lastEventId: "-1" }));
    expect(replay.at(-1).event).toBe("end");
    const run = await c.runs.create(T, "lead_agent", { input: human("bg") });
    expect(typeof run.run_id).toBe("string");
    const joined = (await c.runs.join(T, run.run_id)) as { messages: any[] };
    expect(joined.messages.at(-1).content).toBe("You said: bg");
  });

  it("rejects unsupported stream modes with 422 before any part", async () => {
    const T = (await c.threads.create()).thread_id;
    await expect(drain(c.runs.stream(T, "lead_agent", { input: human("x"), streamMode: ["events" as never] }))).rejects.toMatchObject({ status: 422 });
  });

  it("refuses to cancel a finished run (409)", async () => {
    const { T, runId } = await threadWithRun();
    await expect(c.runs.cancel(T, runId)).rejects.toMatchObject({ status: 409 });
  });

  it("deletes the thread", async () => {
    const { T } = await threadWithRun();
    await c.threads.delete(T);
    await expect(c.threads.get(T)).rejects.toMatchObject({ status: 404 });
  });
});

describe("stateless runs", () => {
  it("creates the thread it runs on", async () => {
    let meta: { thread_id?: string } | undefined;
    const parts = await drain(c.runs.stream(null, "lead_agent", { input: human("stateless"), onRunCreated: (m) => (meta = m) }));
    expect(parts.at(-1).event).toBe("end");
    expect((await c.threads.get(meta!.thread_id!)).thread_id).toBe(meta!.thread_id);
    const values = (await c.runs.wait(null, "lead_agent", { input: human("w"), config: { configurable: { thread_id: "stateless-t9" } } })) as { messages: any[] };
    expect(values.messages).toHaveLength(2);
    const again = (await c.runs.wait(null, "lead_agent", { input: human("w2"), config: { configurable: { thread_id: "stateless-t9" } } })) as { messages: any[] };
    expect(again.messages).toHaveLength(4);
  });
});

describe("errors inside runs", () => {
  it("streams an error part and makes runs.wait reject with the error", async () => {
    const t = await c.threads.create();
    const parts = await drain(c.runs.stream(t.thread_id, "lead_agent", { input: human("!fail boom") }));
    const error = parts.find((p) => p.event === "error");
    expect(error.data).toMatchObject({ message: "boom", name: "Error" });
    expect(parts.at(-1).event).toBe("end");
    await expect(c.runs.wait(t.thread_id, "lead_agent", { input: human("!fail boom") })).rejects.toThrow(/boom/);
    expect((await c.threads.get(t.thread_id)).status).toBe("error");
  });
});

describe("busy threads, cancellation and multitask strategies", () => {
  it("rejects a second run with 409, cancels with wait (204) and ends interrupted", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    await expect(drain(c.runs.stream(t.thread_id, "lead_agent", { input: human("x") }))).rejects.toMatchObject({ status: 409 });
    expect(await c.runs.cancel(t.thread_id, run.run_id, true)).toBeUndefined();
    expect((await c.runs.get(t.thread_id, run.run_id)).status).toBe("interrupted");
    expect((await c.threads.get(t.thread_id)).status).toBe("idle");
    expect(await c.runs.cancel(t.thread_id, run.run_id)).toBeUndefined();
  });

  it("cancel without wait answers 202 and the run is interrupted within a second", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    const res = await fetch(`${h.url}/threads/${t.thread_id}/runs/${run.run_id}/cancel`, { method: "POST" });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    await until(async () => (await c.runs.get(t.thread_id, run.run_id)).status === "interrupted", 1000);
    const joined = await drain(c.runs.joinStream(t.thread_id, run.run_id));
    expect(joined.at(-1).event).toBe("end");
    expect((await fetch(`${h.url}/threads/${t.thread_id}/runs/${run.run_id}/cancel?action=bogus`, { method: "POST" })).status).toBe(422);
    expect((await fetch(`${h.url}/threads/${t.thread_id}/runs/nope/cancel`, { method: "POST" })).status).toBe(404);
  });

  it("rollback restores the pre-run state and ends the run in error", async () => {
    const t = await c.threads.create();
    await c.threads.updateState(t.thread_id, { values: { title: "Before rollback", messages: [{ type: "human", content: "before" }] } });
    const run = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    await until(async () => ((await c.threads.getState<{ messages: any[] }>(t.thread_id)).values.messages?.length ?? 0) > 1);
    await c.runs.cancel(t.thread_id, run.run_id, true, "rollback");
    const record = await c.runs.get(t.thread_id, run.run_id);
    expect(record.status).toBe("error");
    expect((record as any).error).toBe("Rolled back by user");
    const state = await c.threads.getState<{ title: string; messages: any[] }>(t.thread_id);
    expect(state.values.title).toBe("Before rollback");
    expect(state.values.messages.map((m) => [m.type, m.content])).toEqual([["human", "before"]]);
  });

  it("interrupt: the new run interrupts the old one, then runs after it", async () => {
    const t = await c.threads.create();
    const r1 = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    await until(async () => (await c.runs.get(t.thread_id, r1.run_id)).status === "running");
    const parts = await drain(c.runs.stream(t.thread_id, "lead_agent", { input: human("second"), multitaskStrategy: "interrupt" }));
    expect(parts.at(-1).event).toBe("end");
    expect((await c.runs.get(t.thread_id, r1.run_id)).status).toBe("interrupted");
    const messages = (await c.threads.getState<{ messages: any[] }>(t.thread_id)).values.messages.map((m) => m.content);
    expect(messages.at(-2)).toBe("second");
    expect(messages.at(-1)).toBe("You said: second");
  });

  it("rollback strategy: the old run's writes are gone before the new run starts", async () => {
    const t = await c.threads.create();
    await c.threads.updateState(t.thread_id, { values: { title: "Before" } });
    const r1 = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    await until(async () => (await c.runs.get(t.thread_id, r1.run_id)).status === "running");
    await drain(c.runs.stream(t.thread_id, "lead_agent", { input: human("fresh"), multitaskStrategy: "rollback" }));
    expect((await c.runs.get(t.thread_id, r1.run_id)).status).toBe("error");
    const state = await c.threads.getState<{ title: string; messages: any[] }>(t.thread_id);
    expect(state.values.title).toBe("Before");
    expect(state.values.messages.map((m) => m.content)).toEqual(["fresh", "You said: fresh"]);
  });

  it("enqueue: the new run waits for the old one and both succeed in order", async () => {
    const t = await c.threads.create();
    const r1 = await c.runs.create(t.thread_id, "lead_agent", { input: human("one two three"), context: slowContext });
    const r2 = await c.runs.create(t.thread_id, "lead_agent", { input: human("queued"), multitaskStrategy: "enqueue" });
    expect(r2.status).toBe("pending");
    await c.runs.join(t.thread_id, r2.run_id);
    expect((await c.runs.get(t.thread_id, r1.run_id)).status).toBe("success");
    expect((await c.runs.get(t.thread_id, r2.run_id)).status).toBe("success");
    const messages = (await c.threads.getState<{ messages: any[] }>(t.thread_id)).values.messages.map((m) => m.content);
    expect(messages).toEqual(["one two three", "You said: one two three", "queued", "You said: queued"]);
  });

  it("refuses to delete a thread while a run is in flight (409), and the thread survives", async () => {
    const t = await c.threads.create();
    const run = await c.runs.create(t.thread_id, "lead_agent", { input: slowInput(), context: slowContext });
    expect((await fetch(`${h.url}/threads/${t.thread_id}`, { method: "DELETE" })).status).toBe(409);
    await c.runs.cancel(t.thread_id, run.run_id, true);
    expect((await c.threads.get(t.thread_id)).thread_id).toBe(t.thread_id);
  });
});

describe("replay", () => {
  it("resumes a join stream strictly after Last-Event-ID", async () => {
    const t = await c.threads.create();
    const res = await postJson(`${h.url}/threads/${t.thread_id}/runs/stream`, { input: human("a b c"), stream_mode: ["values", "messages-tuple"] });
    const { frames } = parseSse(await res.text());
    const runId = frames[0].data.run_id;
    const cut = frames[2].id!;
    const resumed = await drain(c.runs.joinStream(t.thread_id, runId, { lastEventId: cut }));
    // Everything after the cut, in order, then `end` (which carries the last id: SDK ids are sticky).
    expect(resumed.slice(0, -1).map((p) => [p.event, p.id])).toEqual(frames.slice(3, -1).map((f) => [f.event, f.id]));
    expect(resumed[0].id).toBe(frames[3].id);
    expect(resumed.at(-1).event).toBe("end");
  });
});

describe("interrupts", () => {
  it("stops before a node with interrupt_before, marks the thread interrupted, and resumes with a new run", async () => {
    const t = await c.threads.create();
    const parts = await drain(c.runs.stream(t.thread_id, "lead_agent", { input: human('!call ask_clarification {"question":"q?"}'), streamMode: ["updates"], interruptBefore: ["tools"] }));
    expect(parts.some((p) => p.event === "updates" && "__interrupt__" in p.data)).toBe(true);
    const state = await c.threads.getState(t.thread_id);
    expect(state.next).toEqual(["tools"]);
    expect((await c.threads.get(t.thread_id)).status).toBe("interrupted");
    const resumed = (await c.runs.wait(t.thread_id, "lead_agent", { input: null as never })) as { messages: any[] };
    expect(resumed.messages.at(-1)).toMatchObject({ type: "tool", name: "ask_clarification" });
    expect((await c.threads.get(t.thread_id)).status).toBe("idle");
  });
});

describe("a fresh thread's state", () => {
  it("has empty values, no next nodes and a checkpoint id before its first run", async () => {
    const t = await c.threads.create();
    const state = await c.threads.getState(t.thread_id);
    expect(state.values).toEqual({});
    expect(state.next).toEqual([]);
    expect(typeof state.checkpoint.checkpoint_id).toBe("string");
    expect(typeof (state as any).checkpoint_id).toBe("string");
    const parts = await drain(c.runs.stream(t.thread_id, "lead_agent", { input: human("first") }));
    expect(parts.filter((p) => p.event === "values").at(-1).data.messages.map((m: any) => m.content)).toEqual(["first", "You said: first"]);
  });
});
