// `/metrics` of the whole service under `WORKERS=N` (node:cluster): the worker that answers the scrape asks the
// primary, which collects every worker's registry with prom-client's AggregatorRegistry.clusterMetrics() (counters
// and histograms summed; gauges by their declared aggregator, see metrics.ts) and sends the text back.
import cluster from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

/** IPC message type between a worker and the primary (prom-client uses its own for the collection itself). */
const MESSAGE = "deerflow:cluster-metrics";

type Request = { type: typeof MESSAGE; id: number };
type Reply = Request & { text?: string; error?: string };

/**
 * In the primary: answers the workers' requests for the service-wide metrics. Call once, before forking.
 * A collection that fails (a worker did not answer within prom-client's 5 s) is answered with its error.
 */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker, message: Request) => {
    if (message?.type !== MESSAGE) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: MESSAGE, id: message.id, text } satisfies Reply),
      (err: Error) => worker.send({ type: MESSAGE, id: message.id, error: err.message } satisfies Reply),
    );
  });
}

/**
 * In a worker: offers `registry` to the primary's collections and returns the reader of the service-wide text
 * exposition (what `/metrics` answers).
 * @param timeoutMs How long a read waits for the primary (default 10000 ms).
 * @returns a function resolving with the aggregated metrics; it rejects with Error "cluster metrics: ..." when the
 *   primary reports a failure or does not answer in time.
 */
export function clusterMetricsReader(registry: Registry, timeoutMs = 10_000): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // Its constructor installs the worker's listener for the primary's collection requests.
  new AggregatorRegistry();
  const pending = new Map<number, (reply: Reply) => void>();
  let next = 0;
  process.on("message", (message: Reply) => {
    if (message?.type === MESSAGE) pending.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => settle({ type: MESSAGE, id, error: "the primary did not answer in time" }), timeoutMs);
      function settle(reply: Reply) {
        clearTimeout(timer);
        pending.delete(id);
        if (reply.text !== undefined) resolve(reply.text);
        else reject(new Error(`cluster metrics: ${reply.error}`));
      }
      pending.set(id, settle);
      process.send!({ type: MESSAGE, id } satisfies Request);
    });
}
