// Throughput and time to first byte of stateless `POST /runs/stream` against a real server process (the entry
// `npm start` runs) with the zero-latency scripted model, at concurrency 1, 16 and 64. Loopback only.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

/** One streamed run: returns [time to first byte, time to the end of the stream] in ms. */
async function oneRun(url: string, i: number): Promise<[number, number]> {
  const start = performance.now();
  const res = await fetch(`${url}/runs/stream`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: { messages: [{ role: "user", content: `bench ${i}` }] }, stream_mode: ["values", "messages-tuple"] }),
  });
  const reader = res.body!.getReader();
  let first = 0;
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (!first) first = performance.now() - start;
    text += new TextDecoder().decode(value);
  }
  if (!text.includes("event: end") || text.includes("event: error")) throw new Error(`run ${i} did not end cleanly`);
  return [first, performance.now() - start];
}

/** Streamed runs per second and latency at each concurrency level. */
export async function runRunsBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "dfgw-bench-runs-"));
  const server = await startServer(dir);
  const results: BenchResult[] = [];
  const notes: string[] = [];
  try {
    for (let i = 0; i < 20; i++) await oneRun(server.url, -i);
    for (const { concurrency, runs } of LEVELS) {
      const ttfb: number[] = [];
      const total: number[] = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < runs) {
            const [first, all] = await oneRun(server.url, next++);
            ttfb.push(first);
            total.push(all);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
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
