// Throughput, latency, server CPU per run, resident memory and event-loop delay of stateless `POST /runs/stream`
// against a real server process (what `npm start` runs: the compiled dist/src/server.js) with the zero-latency
// scripted model, at concurrency 1, 16 and 64. Loopback only. CPU and RSS are read from /proc (Linux).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import path from "node:path";
import { startBenchGateway } from "./gateway-server.js";
import type { BenchResult, BenchSuite } from "./stats.js";

const LEVELS: { concurrency: number; runs: number }[] = [
  { concurrency: 1, runs: 150 },
  { concurrency: 16, runs: 400 },
  { concurrency: 64, runs: 640 },
];
const CONFIG = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n    token_delay_ms: 0\n";

/** Server CPU time (user + system) in ms so far, from /proc; null where there is no /proc. */
function cpuMs(pid: number): number | null {
  try {
    // Fields 14 and 15 of /proc/<pid>/stat (after the parenthesised command name), in clock ticks of 10 ms.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** Resident memory in MB, from /proc; null where there is no /proc. */
function rssMb(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * The event-loop delay p99 in ms since the previous call, from the server's `/metrics` (prom-client's
 * `monitorEventLoopDelay` histogram, which each scrape resets).
 */
async function eventLoopP99Ms(url: string): Promise<number | null> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = /^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(text)?.[1];
  return value === undefined ? null : Number(value) * 1000;
}


/**
 * One streamed run over a keep-alive `node:http` agent sized to the concurrency (one socket per worker, so the
 * client adds no queueing of its own): returns [time to first body byte, to the first `messages` frame, to the
 * end of the stream] in ms.
 */
function oneRun(url: string, agent: http.Agent, i: number): Promise<[number, number, number]> {
  const body = JSON.stringify({ input: { messages: [{ role: "user", content: `bench ${i}` }] }, stream_mode: ["values", "messages-tuple"] });
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/runs/stream`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      let first = 0;
      let token = 0;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (!first) first = performance.now() - start;
        if (!token && chunk.includes("event: messages")) token = performance.now() - start;
        text += chunk;
      });
      res.on("end", () => {
        if (!text.includes("event: end") || text.includes("event: error")) reject(new Error(`run ${i} did not end cleanly`));
        else resolve([first, token, performance.now() - start]);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Streamed runs per second, latency, server CPU per run, RSS and event-loop delay at each concurrency level. */
export async function runRunsBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-bench-runs-"));
  const server = await startBenchGateway(dir, CONFIG);
  const results: BenchResult[] = [];
  const notes: string[] = [];
  const rows = ["| C | runs | runs/s | server CPU ms/run | RSS MB at end | event-loop delay p99 ms |", "| ---: | ---: | ---: | ---: | ---: | ---: |"];
  const fmt = (x: number | null, digits = 1) => (x === null ? "n/a" : x.toFixed(digits));
  try {
    const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 20; i++) await oneRun(server.url, warmAgent, -i);
    warmAgent.destroy();
    for (const { concurrency, runs } of LEVELS) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
      const ttfb: number[] = [];
      const firstToken: number[] = [];
      const total: number[] = [];
      let next = 0;
      await eventLoopP99Ms(server.url);
      const cpuBefore = cpuMs(server.pid);
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < runs) {
            const [first, token, all] = await oneRun(server.url, agent, next++);
            ttfb.push(first);
            firstToken.push(token);
            total.push(all);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const cpuAfter = cpuMs(server.pid);
      const loopP99 = await eventLoopP99Ms(server.url);
      agent.destroy();
      results.push(
        { name: `c=${concurrency}: time to first byte`, samples: ttfb },
        { name: `c=${concurrency}: first token (first messages frame)`, samples: firstToken },
        { name: `c=${concurrency}: whole run (build + stream + end)`, samples: total },
      );
      const perRun = cpuBefore !== null && cpuAfter !== null ? (cpuAfter - cpuBefore) / runs : null;
      rows.push(`| ${concurrency} | ${runs} | ${(runs / seconds).toFixed(1)} | ${fmt(perRun, 2)} | ${fmt(rssMb(server.pid), 0)} | ${fmt(loopP99)} |`);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  notes.push("server: node dist/src/server.js with the heap flags of npm start, SQLite checkpoints, scripted model with token_delay_ms 0, stream_mode values + messages-tuple, auth off");
  notes.push("server CPU per run: utime + stime of the server process over the level (10 ms ticks) divided by its runs, idle work included");
  return { results, notes, extra: rows.join("\n") };
}
