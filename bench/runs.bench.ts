// Throughput and time to first byte of stateless `POST /runs/stream` against a real server process (the entry
// `npm start` runs) with the zero-latency scripted model, at concurrency 1, 16 and 64. Loopback only.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchResult, BenchSuite } from "./stats.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const LEVELS: { concurrency: number; runs: number }[] = [
  { concurrency: 1, runs: 150 },
  { concurrency: 16, runs: 400 },
  { concurrency: 64, runs: 640 },
];
const CONFIG = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n    token_delay_ms: 0\n";

async function startServer(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  writeFileSync(path.join(dir, "config.yaml"), CONFIG);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
    cwd: ROOT,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), LOG_LEVEL: "warn" },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error("server did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/**
 * One streamed run over a keep-alive `node:http` agent sized to the concurrency (one socket per worker, so the
 * client adds no queueing of its own): returns [time to first body byte, time to the end of the stream] in ms.
 */
function oneRun(url: string, agent: http.Agent, i: number): Promise<[number, number]> {
  const body = JSON.stringify({ input: { messages: [{ role: "user", content: `bench ${i}` }] }, stream_mode: ["values", "messages-tuple"] });
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/runs/stream`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      let first = 0;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (!first) first = performance.now() - start;
        text += chunk;
      });
      res.on("end", () => {
        if (!text.includes("event: end") || text.includes("event: error")) reject(new Error(`run ${i} did not end cleanly`));
        else resolve([first, performance.now() - start]);
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Streamed runs per second and latency at each concurrency level. */
export async function runRunsBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-bench-runs-"));
  const server = await startServer(dir);
  const results: BenchResult[] = [];
  const notes: string[] = [];
  try {
    const warmAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 20; i++) await oneRun(server.url, warmAgent, -i);
    warmAgent.destroy();
    for (const { concurrency, runs } of LEVELS) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
      const ttfb: number[] = [];
      const total: number[] = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < runs) {
            const [first, all] = await oneRun(server.url, agent, next++);
            ttfb.push(first);
            total.push(all);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      agent.destroy();
      results.push({ name: `c=${concurrency}: time to first byte`, samples: ttfb }, { name: `c=${concurrency}: whole run (build + stream + end)`, samples: total });
      notes.push(`concurrency ${concurrency}: ${runs} runs in ${seconds.toFixed(2)} s = ${(runs / seconds).toFixed(1)} runs/s`);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  notes.push("server: node --import tsx src/server.ts, SQLite checkpoints, scripted model with token_delay_ms 0, stream_mode values + messages-tuple");
  return { results, notes };
}
