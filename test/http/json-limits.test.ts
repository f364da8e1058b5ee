import { HumanMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findJsonLimitViolation } from "../../src/http/json-limits.js";
import { postJson, startHarness, type Harness } from "../support/harness.js";

// Issue 13 items 1-2: every JSON body is bounded at the edge, admission is atomic, and an unreadable checkpoint
// does not break listings.
const CONFIG = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n";
let h: Harness;
beforeAll(async () => {
  h = await startHarness(CONFIG);
});
afterAll(async () => h.close());

/** A JSON text nesting `[` (or `{"k":`) `depth` times around `leaf`. */
const nested = (depth: number, kind: "array" | "object", leaf = "1") =>
  kind === "array" ? "[".repeat(depth) + leaf + "]".repeat(depth) : '{"k":'.repeat(depth) + leaf + "}".repeat(depth);
const postRaw = (url: string, text: string, method = "POST") => fetch(url, { method, headers: { "content-type": "application/json" }, body: text });
const say = (content: string) => ({ input: { messages: [{ role: "user", content }] } });

describe("JSON limits at the edge", () => {
  it("refuses deep nesting anywhere with 422 naming the field, and the thread keeps working", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "deep" });
    const res = await postRaw(`${h.url}/threads/deep/runs`, `{"metadata": {"x": ${nested(10_000, "array")}}}`);
    expect(res.status).toBe(422);
    const detail = (await res.json()).detail;
    expect(detail[0].type).toBe("json_too_deep");
    expect(detail[0].loc.slice(0, 3)).toEqual(["body", "metadata", "x"]);
    // Nothing was registered: the thread takes runs, state updates and deletion as before.
    expect((await (await fetch(`${h.url}/threads/deep/runs`)).json())).toEqual([]);
    const ok = await postJson(`${h.url}/threads/deep/runs/wait`, say("hello"));
    expect(ok.status).toBe(200);
    expect((await postJson(`${h.url}/threads/deep/state`, { values: { title: "t" } })).status).toBe(200);
    expect((await fetch(`${h.url}/threads/deep`, { method: "DELETE" })).status).toBe(200);
  });

  it("refuses a message whose additional_kwargs nest too deep, on runs and on state updates", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "kw" });
    const message = `{"role": "user", "content": "hi", "additional_kwargs": {"a": ${nested(49, "object")}}}`;
    for (const [url, body] of [
      [`${h.url}/threads/kw/runs/wait`, `{"input": {"messages": [${message}]}}`],
      [`${h.url}/api/threads/kw/runs/stream`, `{"input": {"messages": [${message}]}}`],
      [`${h.url}/threads/kw/state`, `{"values": {"messages": [${message}]}}`],
    ]) {
      const res = await postRaw(url, body);
      expect(res.status, url).toBe(422);
      const [issue] = (await res.json()).detail;
      expect(issue.loc.slice(0, 6), url).toEqual(["body", ...(url.endsWith("state") ? ["values"] : ["input"]), "messages", 0, "additional_kwargs", "a"]);
    }
    // The thread is readable and listable afterwards.
    expect((await fetch(`${h.url}/threads/kw/state`)).status).toBe(200);
    expect((await postJson(`${h.url}/threads/search`, {})).status).toBe(200);
    // Moderate nesting is still accepted.
    const fine = `{"role": "user", "content": "hi", "additional_kwargs": {"a": ${nested(20, "object")}}}`;
    expect((await postRaw(`${h.url}/threads/kw/runs/wait`, `{"input": {"messages": [${fine}]}}`)).status).toBe(200);
    expect((await fetch(`${h.url}/threads/kw/state`)).status).toBe(200);
  });

  it("refuses oversized strings, arrays and objects with 422 naming the field, on any JSON route", async () => {
    const long = JSON.stringify({ thread_id: "big", metadata: { note: "x".repeat(4 * 1024 * 1024 + 1) } });
    const res = await postRaw(`${h.url}/threads`, long);
    // Over the 1 MiB limit of thread routes: refused before parsing.
    expect(res.status).toBe(413);
    const longInRun = await postRaw(`${h.url}/runs/wait`, JSON.stringify({ input: { messages: [{ role: "user", content: "y".repeat(4 * 1024 * 1024 + 1) }] } }));
    expect(longInRun.status).toBe(422);
    expect((await longInRun.json()).detail[0]).toMatchObject({ type: "string_too_long", loc: ["body", "input", "messages", 0, "content"] });
    const manyItems = await postRaw(`${h.url}/threads/search`, JSON.stringify({ ids: Array.from({ length: 10_001 }, () => "a") }));
    expect(manyItems.status).toBe(422);
    expect((await manyItems.json()).detail[0]).toMatchObject({ type: "array_too_long", loc: ["body", "ids"] });
    const manyKeys = await postRaw(`${h.url}/threads`, JSON.stringify({ metadata: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i])) }));
    expect(manyKeys.status).toBe(422);
    expect((await manyKeys.json()).detail[0]).toMatchObject({ type: "object_too_large", loc: ["body", "metadata"] });
  });

  it("refuses prototype-poisoning keys as invalid JSON", async () => {
    const res = await postRaw(`${h.url}/threads`, '{"metadata": {"__proto__": {"admin": true}}}');
    expect(res.status).toBe(422);
    expect((await res.json()).detail[0].type).toBe("json_invalid");
  });

  it("checks iteratively: a million levels do not overflow the checker", () => {
    let value: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) value = [value];
    expect(findJsonLimitViolation(value)?.type).toBe("json_too_deep");
  });
});

describe("run admission", () => {
  it("registers nothing when the run cannot be stored: no stuck 409, no ghost run", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "atomic" });
    const store = h.app.deerflow.persistence.runs;
    const save = store.save.bind(store);
    store.save = () => {
      throw new Error("disk full");
    };
    try {
      expect((await postJson(`${h.url}/threads/atomic/runs`, say("one"))).status).toBe(500);
    } finally {
      store.save = save;
    }
    expect(await (await fetch(`${h.url}/threads/atomic/runs`)).json()).toEqual([]);
    const res = await postJson(`${h.url}/threads/atomic/runs/wait`, say("two"));
    expect(res.status).toBe(200);
    expect((await fetch(`${h.url}/threads/atomic`, { method: "DELETE" })).status).toBe(200);
  });

  it("creates a stateless run's new thread busy for it, and leaves it idle when the run cannot be stored", async () => {
    const store = h.app.deerflow.persistence.runs;
    const threads = h.app.deerflow.persistence.threads;
    const save = store.save.bind(store);
    let refused = "";
    store.save = (record) => {
      refused = record.thread_id;
      throw new Error("disk full");
    };
    try {
      expect((await postJson(`${h.url}/runs/wait`, say("one"))).status).toBe(500);
    } finally {
      store.save = save;
    }
    expect(await threads.get(refused)).toMatchObject({ status: "idle" });
    // Held busy while its run is pending, idle after; the thread created for a run has the run's messages only.
    const statuses: string[] = [];
    store.save = async (record) => {
      if (record.status === "pending") statuses.push((await threads.get(record.thread_id))!.status);
      await save(record);
    };
    let res: Response;
    try {
      res = await postJson(`${h.url}/runs/wait`, say("two"));
      expect(res.status).toBe(200);
      expect((await res.json()).messages.map((m: { type: string }) => m.type)).toEqual(["human", "ai"]);
    } finally {
      store.save = save;
    }
    expect(statuses).toEqual(["busy"]);
    const threadId = (res.headers.get("content-location") ?? "").split("/")[2];
    expect(await (await fetch(`${h.url}/threads/${threadId}`)).json()).toMatchObject({ status: "idle" });
  });

  it("does not run a stateless run on a thread another user created after the request was checked", async () => {
    const threads = h.app.deerflow.persistence.threads;
    await threads.create("stateless-race", { owner: "mallory" }, "mallory");
    const get = threads.get.bind(threads);
    // The request's check sees no thread; mallory's creation lands before the run's thread is created.
    threads.get = async (id) => (id === "stateless-race" ? null : get(id));
    try {
      const res = await postJson(`${h.url}/runs/wait`, { ...say("mine?"), config: { configurable: { thread_id: "stateless-race" } } });
      expect(res.status).toBe(404);
    } finally {
      threads.get = get;
    }
    expect(await threads.get("stateless-race")).toMatchObject({ owner_id: "mallory", status: "idle", metadata: { owner: "mallory" } });
    expect(await h.app.deerflow.persistence.checkpointer.getTuple({ configurable: { thread_id: "stateless-race", checkpoint_ns: "" } })).toBeUndefined();
  });

  it("releases the thread when the run's outcome cannot be recorded", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "outcome" });
    const store = h.app.deerflow.persistence.runs;
    const save = store.save.bind(store);
    let calls = 0;
    // The first save (admission) works; every later one (running, final status) fails.
    store.save = async (record) => {
      if (++calls > 1) throw new Error("disk full");
      await save(record);
    };
    try {
      const res = await postJson(`${h.url}/threads/outcome/runs/wait`, say("one"));
      expect(res.status).toBe(200);
    } finally {
      store.save = save;
    }
    expect((await postJson(`${h.url}/threads/outcome/runs/wait`, say("two"))).status).toBe(200);
  });
});

describe("unreadable checkpoints", () => {
  it("do not fail the thread search for everyone", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "good" });
    await postJson(`${h.url}/threads/good/state`, { values: { title: "Good one" } });
    await postJson(`${h.url}/threads`, { thread_id: "broken" });
    // A checkpoint written before the edge limits existed: LangChain refuses to load it back (depth > 50).
    const { checkpointer } = h.app.deerflow.persistence;
    const deep = JSON.parse(nested(60, "object"));
    const message = new HumanMessage({ id: "m1", content: "hi", additional_kwargs: { a: deep } });
    const config = { configurable: { thread_id: "broken", checkpoint_ns: "" } };
    await checkpointer.put(config, { v: 4, id: "ffffffff-ffff-6fff-bfff-ffffffffffff", ts: new Date().toISOString(), channel_values: { messages: [message] }, channel_versions: {}, versions_seen: {} }, { source: "update", step: 1, parents: {} }, {});
    expect((await fetch(`${h.url}/threads/broken/state`)).status).toBe(500);
    const res = await postJson(`${h.url}/threads/search`, { limit: 100 });
    expect(res.status).toBe(200);
    const found = await res.json();
    expect(found.find((t: { thread_id: string }) => t.thread_id === "good").values).toEqual({ title: "Good one" });
    expect(found.find((t: { thread_id: string }) => t.thread_id === "broken").values).toEqual({});
  });
});
