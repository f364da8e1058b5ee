// Prints the V8 flags `npm start` and the Docker image put on the server's command line (docs/performance.md
// "Memory footprint"): the footprint of a gateway process is mostly heap V8 keeps above what is live, and these flags keep
// less of it. Measured with bench-anchors' load (zero-latency runs, server pinned to one core, 3,000 runs):
//   --max-semi-space-size=8     young generation of 2 x 8 MB instead of 2 x 16 MB.
//   --heap-growing-percent=25   a full collection when the old generation has grown by a quarter since the last
//                               one (V8 lets it grow by up to 80% under a 1.5 GB cap): together with the line above,
//                               RSS 173-194 MB against 230-234 MB at 256 concurrent runs, 157-172 against 200-222
//                               at 64.
//   --single-threaded-gc        only when the process may use one CPU (its affinity, e.g. `taskset -c 0`): V8's
//                               parallel and concurrent GC threads can only take turns with the JavaScript thread
//                               on that CPU; doing the work on it directly cut context switches from 6.3 to 4.4 a
//                               run and helper-thread CPU from 1.3-1.6 to 0.6 ms a run (64 concurrent runs).
// The operator's choice wins: a flag already in NODE_OPTIONS (`--max-semi-space-size`, which Node accepts there) is
// not repeated, and DEER_FLOW_V8_FLAGS, when set (even empty), replaces this list.
import os from "node:os";
import { pathToFileURL } from "node:url";

/**
 * The flags for a process with `env` and `cpus` usable CPUs, space-separated.
 * @param {NodeJS.ProcessEnv} env
 * @param {number} cpus
 * @returns {string}
 */
export function v8Flags(env, cpus) {
  if (env.DEER_FLOW_V8_FLAGS !== undefined) return env.DEER_FLOW_V8_FLAGS.trim();
  const nodeOptions = env.NODE_OPTIONS ?? "";
  const flags = [];
  if (!/--max-semi-space-size\b/.test(nodeOptions)) flags.push("--max-semi-space-size=8");
  flags.push("--heap-growing-percent=25");
  if (cpus === 1) flags.push("--single-threaded-gc");
  return flags.join(" ");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.stdout.write(v8Flags(process.env, os.availableParallelism()));
