import { describe, expect, it } from "vitest";
import { RunScheduler } from "../../src/runtime/runs/run-scheduler.js";

describe("RunScheduler", () => {
  it("gives one turn per event-loop iteration, first come first served, so other callbacks run between turns", async () => {
    const scheduler = new RunScheduler();
    const order: string[] = [];
    const a = scheduler.turn().then(() => {
      order.push("a");
      // Work that arrives meanwhile (a socket callback, an SSE write) must not wait for every queued run.
      setImmediate(() => order.push("other"));
    });
    const b = scheduler.turn().then(() => order.push("b"));
    const c = scheduler.turn().then(() => order.push("c"));
    expect(scheduler.queued).toBe(3);
    await Promise.all([a, b, c]);
    await new Promise((resolve) => setImmediate(resolve));
    // With a bare setImmediate per run, a, b and c would all resume in one check phase, before "other".
    expect(order).toEqual(["a", "b", "other", "c"]);
    expect(scheduler.queued).toBe(0);
  });

  it("serves a turn asked for after the queue drained", async () => {
    const scheduler = new RunScheduler();
    await scheduler.turn();
    await scheduler.turn();
    expect(scheduler.queued).toBe(0);
  });
});
