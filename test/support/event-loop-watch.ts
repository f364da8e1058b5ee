// Watches a gateway's event loop from outside it: a worker thread (its own event loop) polls `GET /health` and
// records the slowest answer, so a stall of the gateway's loop shows even when the gateway runs in the test's
// process (whose own timers stall with it).
import { Worker } from "node:worker_threads";

/** A running watch; `stop()` ends it and reports the slowest `/health` answer seen (ms) and how many were made. */
export interface HealthWatch {
  stop(): Promise<{ worstMs: number; probes: number }>;
}

const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
let stopped = false;
let worst = 0;
let probes = 0;
let inFlightSince = null;
parentPort.on("message", () => {
  stopped = true;
  // A probe still waiting counts with the time it has waited so far.
  if (inFlightSince !== null) worst = Math.max(worst, performance.now() - inFlightSince);
  parentPort.postMessage({ worstMs: worst, probes, final: true });
});
(async () => {
  while (!stopped) {
    inFlightSince = performance.now();
    try {
      const res = await fetch(workerData.url, { headers: { connection: "close" } });
      await res.arrayBuffer();
    } catch {}
    if (stopped) break;
    worst = Math.max(worst, performance.now() - inFlightSince);
    inFlightSince = null;
    probes++;
    if (probes === 1) parentPort.postMessage({ ready: true });
    await new Promise((r) => setTimeout(r, workerData.everyMs));
  }
})();
`;

/**
 * Starts polling `${baseUrl}/health` every `everyMs` ms (one request at a time) from a worker thread.
 * Waits until the first probe has been answered, so a watch that reports 0 probes cannot pass silently.
 */
export async function watchHealth(baseUrl: string, everyMs = 10): Promise<HealthWatch> {
  const worker = new Worker(WORKER, { eval: true, workerData: { url: `${baseUrl}/health`, everyMs } });
  const message = (want: (m: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const onMessage = (m: Record<string, unknown>) => {
        if (!want(m)) return;
        worker.off("message", onMessage);
        resolve(m);
      };
      worker.on("message", onMessage);
      worker.once("error", reject);
    });
  const report = () => {
    const final = message((m) => m.final === true);
    worker.postMessage("stop");
    return final.then((m) => ({ worstMs: m.worstMs as number, probes: m.probes as number }));
  };
  // The attack starts once the watch has been answered (the first fetch in a worker loads undici).
  await message((m) => m.ready === true);
  return {
    async stop() {
      try {
        return await report();
      } finally {
        await worker.terminate();
      }
    },
  };
}
