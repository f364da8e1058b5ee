// What a finished run leaves behind: a packed event log for its retention minute, dropped on one timer; no control
// object, never the request's async context (run scope, logger, pinned config) nor the worker's closures.
import { AsyncLocalStorage } from "node:async_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExpiryQueue } from "../../src/runtime/stream/expiry-queue.js";
import { RunManager } from "../../src/runtime/runs/run-manager.js";
import { RunStore } from "../../src/runtime/persistence/sqlite/run-store.js";
import { MemoryStreamBridge, PACK_DELAY_MS, PACK_GROUP_MAX } from "../../src/runtime/stream/stream-bridge.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Whether `ref`'s target was collected, after full collections with turns of the event loop between them. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5 && ref.deref(); i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return ref.deref() === undefined;
}

const admitInput = (threadId: string) => ({ threadId, assistantId: "lead_agent", metadata: {}, kwargs: { input: null, config: {} }, onDisconnect: "cancel" as const, strategy: "reject" as const });

afterEach(() => vi.useRealTimers());

describe("ExpiryQueue", () => {
  it("expires keys in deadline order; a reschedule moves a key's deadline and a cancel forgets it", () => {
    vi.useFakeTimers();
    const expired: string[] = [];
    const queue = new ExpiryQueue<string>((k) => expired.push(k));
    queue.schedule("a", 1_000);
    queue.schedule("b", 1_000);
    queue.schedule("c", 1_000);
    vi.advanceTimersByTime(500);
    queue.schedule("a", 1_000); // now due at 1500
    queue.cancel("c");
    expect(queue.size).toBe(2);
    vi.advanceTimersByTime(499);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(["b"]);
    vi.advanceTimersByTime(500);
    expect(expired).toEqual(["b", "a"]);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("keeps one timer however many keys wait, and a throwing callback does not stop the others", () => {
    vi.useFakeTimers();
    const expired: number[] = [];
    const queue = new ExpiryQueue<number>((k) => {
      if (k === 3) throw new Error("boom");
      expired.push(k);
    });
    for (let i = 0; i < 5_000; i++) queue.schedule(i, 60_000);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(60_000);
    expect(expired).toHaveLength(4_999);
    expect(queue.size).toBe(0);
  });

  it("does not hold the scheduling caller's async context while a key waits", async () => {
    const als = new AsyncLocalStorage<{ payload: number[] }>();
    const queue = new ExpiryQueue<string>(() => undefined);
    let ref!: WeakRef<object>;
    await (async () => {
      const store = { payload: new Array(1_000).fill(1) };
      ref = new WeakRef(store);
      als.run(store, () => queue.schedule("k", 60_000));
    })();
    expect(await collected(ref)).toBe(true);
    // A plain timer armed in the same place would have kept it (the check above can fail).
    let kept!: WeakRef<object>;
    let timer!: NodeJS.Timeout;
    await (async () => {
      const store = { payload: [1] };
      kept = new WeakRef(store);
      timer = als.run(store, () => setTimeout(() => undefined, 60_000));
    })();
    expect(await collected(kept)).toBe(false);
    clearTimeout(timer);
    queue.clear();
  });
});

describe("RunManager: a finished run", () => {
  const manager = () => new RunManager(new RunStore(new Database(":memory:")));

  it("leaves no control object and no timer: late cancels, joins and reads answer from the stored record", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const runs = manager();
    const run = await runs.admit(admitInput("t1"));
    const runId = run.record.run_id;
    expect(runs.getActive(runId, "t1")).toBe(run);
    await runs.setStatus(runId, "success");
    runs.finish(runId);
    await run.done;

    expect(runs.getActive(runId)).toBeUndefined();
    expect((runs as unknown as { byThread: Map<string, string[]> }).byThread.has("t1")).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    await expect(runs.cancel("t1", runId)).rejects.toThrow(/not cancellable \(status: success\)/);
    await expect(runs.cancel("t2", runId)).rejects.toThrow(/not found/);
    await runs.settled(runId);
    // The thread admits a new run at once: the finished one does not count as in flight.
    expect(await runs.hasInFlight("t1")).toBe(false);
    const stored = await runs.get(runId, "t1");
    expect(stored).toMatchObject({ run_id: runId, thread_id: "t1", status: "success", kwargs: { input: null, config: {} } });
    expect(await runs.get(runId, "t2")).toBeUndefined();

    // An interrupted run: a late cancel is a no-op, as it was while the run was held.
    const other = await runs.admit(admitInput("t1"));
    await runs.cancel("t1", other.record.run_id);
    runs.finish(other.record.run_id);
    await expect(runs.cancel("t1", other.record.run_id)).resolves.toBeUndefined();
    expect((await runs.get(other.record.run_id))?.status).toBe("interrupted");
  });

  it("lets go of the record, the controller, its abort listeners and the async context once the run finished", async () => {
    const runs = manager();
    const als = new AsyncLocalStorage<{ runScope: number[] }>();
    let controllerRef!: WeakRef<object>;
    let scopeRef!: WeakRef<object>;
    let recordRef!: WeakRef<object>;
    let runId!: string;
    await (async () => {
      const scope = { runScope: new Array(1_000).fill(0) };
      scopeRef = new WeakRef(scope);
      await als.run(scope, async () => {
        const run = await runs.admit(admitInput("t2"));
        runId = run.record.run_id;
        controllerRef = new WeakRef(run.controller);
        recordRef = new WeakRef(run.record);
        // As the worker does: a listener that outlives the run unless the signal goes.
        run.controller.signal.addEventListener("abort", () => scope.runScope.push(1), { once: true });
        await runs.setStatus(runId, "success");
        runs.finish(runId);
      });
    })();
    expect(runs.getActive(runId)).toBeUndefined();
    expect(await collected(controllerRef)).toBe(true);
    expect(await collected(scopeRef)).toBe(true);
    expect(await collected(recordRef)).toBe(true);
  });
});

describe("MemoryStreamBridge: a finished run's log", () => {
  it("is replayable for the retention and dropped after it, on one timer for any number of runs", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const bridge = new MemoryStreamBridge();
    for (let i = 0; i < 100; i++) {
      bridge.open(`r${i}`);
      bridge.publish(`r${i}`, "values", { i });
      bridge.publishEnd(`r${i}`);
      bridge.cleanup(`r${i}`, 60_000);
    }
    // The expiry timer, and the pack timer of the runs that did not fill a group.
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(PACK_DELAY_MS);
    expect(vi.getTimerCount()).toBe(1);
    const held = (bridge as unknown as { runs: Map<string, { packed?: { group: object } }> }).runs;
    expect(new Set([...held.values()].map((log) => log.packed?.group)).size).toBe(Math.ceil(100 / PACK_GROUP_MAX));
    for (const i of [0, 15, 16, 99]) {
      const items = [];
      for await (const item of bridge.subscribe(`r${i}`)) items.push(item.kind === "event" ? JSON.parse(item.event.json) : item.kind);
      expect(items).toEqual([{ i }, "end"]);
    }
    vi.advanceTimersByTime(59_999 - PACK_DELAY_MS);
    expect(bridge.exists("r0")).toBe(true);
    vi.advanceTimersByTime(1);
    expect(bridge.exists("r0")).toBe(false);
    expect(bridge.exists("r99")).toBe(false);
    bridge.close();
  });
});

describe("RunManager: a deleted thread", () => {
  it("forgets every run record it had, and a run admitted meanwhile still settles when its worker finishes", async () => {
    const runs = new RunManager(new RunStore(new Database(":memory:")));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await runs.admit(admitInput("t3"));
      ids.push(run.record.run_id);
      await runs.setStatus(run.record.run_id, "success");
      runs.finish(run.record.run_id);
    }
    // Admitted in the window between the deletion's in-flight check and its record deletion.
    const late = await runs.admit({ ...admitInput("t3"), strategy: "enqueue" });
    await runs.forgetThread("t3");
    for (const id of ids) {
      expect(runs.getActive(id)).toBeUndefined();
      expect(await runs.get(id, "t3")).toBeUndefined();
    }
    expect(runs.getActive(late.record.run_id)).toBe(late);
    const queued = await runs.admit({ ...admitInput("t3"), strategy: "enqueue" });
    runs.finish(late.record.run_id);
    await late.done;
    await queued.predecessors;
    expect(runs.getActive(late.record.run_id)).toBeUndefined();
  });
});
