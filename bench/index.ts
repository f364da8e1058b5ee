// `npm run bench`: runs every benchmark in turn and prints one markdown table per suite. No assertions.
// `npm run bench -- auth` runs only the suites whose title contains the word (case-insensitive).
import os from "node:os";
import { pino } from "pino";
import { setLogger } from "../src/logger.js";
import { runAgentOverheadBench } from "./agent-overhead.bench.js";
import { runAppConfigBench } from "./app-config.bench.js";
import { runAuthBench } from "./auth.bench.js";
import { runBuildAgentBench } from "./build-agent.bench.js";
import { runIdleStreamsBench } from "./idle-streams.bench.js";
import { runSdkChainBench } from "./sdk-chain.bench.js";
import { runRunsBench } from "./runs.bench.js";
import { formatTable, type BenchSuite } from "./stats.js";

/** Every benchmark suite, in run order. */
const SUITES: { title: string; run: () => Promise<BenchSuite> }[] = [
  { title: "Lead agent build and first run", run: runBuildAgentBench },
  { title: "SDK chain (all features): build, first superstep, first run", run: runSdkChainBench },
  { title: "Lead agent vs bare createAgent: CPU per run (issue 16 budget)", run: runAgentOverheadBench },
  { title: "Config: getAppConfig cost and hot reload", run: runAppConfigBench },
  { title: "Gateway: stateless /runs/stream throughput and latency", run: runRunsBench },
  { title: "Gateway: memory of 1,000 idle streams", run: runIdleStreamsBench },
  { title: "Auth: added cost per authenticated request", run: runAuthBench },
];
const only = process.argv[2]?.toLowerCase();

// Per-build warnings (e.g. "Thinking mode is enabled but model ... does not support it") would flood the tables;
// LOG_LEVEL=warn npm run bench shows them.
setLogger(pino({ level: process.env.LOG_LEVEL ?? "silent" }));

const started = performance.now();
console.log(`deerflow-gateway benchmarks: node ${process.version}, ${os.platform()}/${os.arch()}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? "unknown"})`);
for (const suite of SUITES.filter((s) => !only || s.title.toLowerCase().includes(only))) {
  const { results, notes, extra } = await suite.run();
  console.log(`\n## ${suite.title}\n${results.length ? `\n${formatTable(results)}\n` : ""}`);
  for (const note of notes) console.log(`- ${note}`);
  if (extra) console.log(`\n${extra}`);
}
console.log(`\ndone in ${((performance.now() - started) / 1000).toFixed(1)} s`);
