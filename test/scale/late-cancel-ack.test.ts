// A process forgets a run as soon as its worker finished (run-manager.ts), yet a cancel from another process that saw
// the run in flight a moment earlier must still be acknowledged, or that process waits out its ack timeout.
import Database from "better-sqlite3";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { DistributedRunManager } from "../../src/runtime/runs/distributed-run-manager.js";
import { RunStore } from "../../src/runtime/persistence/sqlite/run-store.js";
import { ThreadStore } from "../../src/runtime/persistence/sqlite/thread-store.js";
import { serviceUrls, testPrefix } from "../support/services.js";

const redis = new Redis(serviceUrls().redisUrl);
// The manager's command connection must not sit behind a blocking BLPOP: the waiting side reads on its own.
const reader = new Redis(serviceUrls().redisUrl);
afterAll(() => {
  redis.disconnect();
  reader.disconnect();
});

describe("DistributedRunManager: a remote cancel of a run this process just finished", () => {
  it("is acknowledged (the run is not held any more); a run this process never held is not", async () => {
    const prefix = testPrefix();
    const db = new Database(":memory:");
    const manager = await DistributedRunManager.start({ redis, prefix, runs: new RunStore(db), threads: new ThreadStore(db), logger: pino({ level: "silent" }), leaseMs: 5_000 });
    try {
      const run = await manager.admit({ threadId: "t1", assistantId: "lead_agent", metadata: {}, kwargs: { input: null, config: {} }, onDisconnect: "cancel", strategy: "reject" });
      const runId = run.record.run_id;
      await manager.setStatus(runId, "success");
      manager.finish(runId);
      expect(manager.getActive(runId)).toBeUndefined();

      // Generous for the acknowledged case (a loaded CI machine); a run not held here is never acknowledged.
      const ask = async (id: string, waitS: number) => {
        const ack = `${prefix}ack:${id}`;
        await redis.publish(`${prefix}control`, JSON.stringify({ type: "cancel", runId: id, action: "interrupt", ack }));
        return reader.blpop(ack, waitS);
      };
      expect(await ask(runId, 10)).toEqual([`${prefix}ack:${runId}`, "1"]);
      expect(await ask("0190a5b0-0000-7000-8000-000000000000", 1)).toBeNull();
      // Acknowledged without touching the finished run's stored record.
      expect((await manager.get(runId))?.status).toBe("success");
    } finally {
      await manager.stop();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
    }
  });
});
