// Scale-out benchmark (`npm run bench:scale`): stateless `POST /runs/stream` throughput at concurrency 64 with 1, 2,
// ... gateway processes (`WORKERS=N`, node:cluster) on PostgreSQL + Redis, and the per-run latency the Redis
// bridge adds over the in-memory one (SQLite, one process) at concurrency 1. Uses DEERFLOW_TEST_PG_URL /
// DEERFLOW_TEST_REDIS_URL when set, else starts a private PostgreSQL and Redis (scripts/services.sh).
// BENCH_WORKERS=1,2,4,8 picks the process counts (default 1,2); BENCH_RUNS the runs per level (default 640).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import startServices from "../vitest.global-setup.js";
import { startBenchGateway, type BenchGateway } from "./gateway-server.js";
import { formatTable, summarize, type BenchResult } from "./stats.js";

const MODELS = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n    token_delay_ms: 0\n";
const WORKERS = (process.env.BENCH_WORKERS ?? "1,2").split(",").map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 640);
const CONCURRENCY = 64;

async function createDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `dfbench_${randomUUID().replace(/-/g, "")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function startGateway(dir: string, config: string, workers: number): Promise<BenchGateway> {
  const gw = await startBenchGateway(dir, config, { WORKERS: String(workers) }, 60_000);
  // Give every worker time to listen, so the first requests are not all served by the first one up.
  await new Promise((r) => setTimeout(r, workers > 1 ? 3_000 : 0));
  return gw;
}

/** One streamed stateless run; resolves its whole duration in ms. */
function oneRun(url: string, agent: http.Agent, i: number): Promise<number> {
  const body = JSON.stringify({ input: { messages: [{ role: "user", content: `bench ${i}` }] }, stream_mode: ["values", "messages-tuple"] });
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/runs/stream`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => (text.includes("event: end") && !text.includes("event: error") ? resolve(performance.now() - start) : reject(new Error(`run ${i} failed: ${text.slice(0, 300)}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** `runs` runs at `concurrency`; returns runs/s and the per-run durations. */
async function load(url: string, concurrency: number, runs: number): Promise<{ rate: number; samples: number[] }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) samples.push(await oneRun(url, agent, next++));
    }),
  );
  agent.destroy();
  return { rate: runs / ((performance.now() - started) / 1000), samples };
}

const stopServices = await startServices();
const pgUrl = process.env.DEERFLOW_TEST_PG_URL!;
const redisUrl = process.env.DEERFLOW_TEST_REDIS_URL!;
const results: BenchResult[] = [];
const notes: string[] = [];
const rates = new Map<number, number>();
try {
  console.log(`deerflow-gateway scale-out benchmark: node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? "unknown"}), ${RUNS} runs per level`);
  // Latency, one run at a time, one process each: what PostgreSQL adds over SQLite, and what the Redis bridge adds
  // over the in-memory one on the same database. The variants alternate for ROUNDS rounds, so a neighbour's load
  // on a shared machine hits them alike.
  const VARIANTS = [
    { name: "SQLite + in-memory bridge", db: false, redis: false },
    { name: "PostgreSQL + in-memory bridge", db: true, redis: false },
    { name: "PostgreSQL + Redis bridge", db: true, redis: true },
  ];
  const latency = VARIANTS.map(() => [] as number[]);
  for (let round = 0; round < Number(process.env.BENCH_ROUNDS ?? 3); round++) {
    for (const [i, variant] of VARIANTS.entries()) {
      const dir = mkdtempSync(path.join(os.tmpdir(), "dfgw-bench-scale-"));
      const db = variant.db ? await createDatabase(pgUrl) : null;
      const sections =
        (db ? `database:\n  backend: postgres\n  url: ${db.url}\n` : "") +
        (variant.redis ? `stream_bridge:\n  type: redis\n  url: ${redisUrl}\n  key_prefix: "bench:${randomUUID().slice(0, 8)}:"\n` : "");
      const gw = await startGateway(dir, MODELS + sections, 1);
      try {
        await load(gw.url, 1, 30);
        latency[i].push(...(await load(gw.url, 1, 100)).samples);
      } finally {
        await gw.stop();
        await db?.drop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  VARIANTS.forEach((v, i) => results.push({ name: `c=1 whole run, ${v.name}`, samples: latency[i] }));
  const [lite, pgMem, pgRedis] = latency.map((s) => summarize(s));
  notes.push(`PostgreSQL over SQLite, per run (c=1): p50 +${(pgMem.p50 - lite.p50).toFixed(2)} ms, p99 +${(pgMem.p99 - lite.p99).toFixed(2)} ms`);
  notes.push(`Redis bridge over the in-memory bridge, per run (c=1, both on PostgreSQL): p50 +${(pgRedis.p50 - pgMem.p50).toFixed(2)} ms, p99 +${(pgRedis.p99 - pgMem.p99).toFixed(2)} ms`);
  for (const workers of WORKERS) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dfgw-bench-scale-"));
    const db = await createDatabase(pgUrl);
    const config = `${MODELS}database:\n  backend: postgres\n  url: ${db.url}\nstream_bridge:\n  type: redis\n  url: ${redisUrl}\n  key_prefix: "bench:${randomUUID().slice(0, 8)}:"\n`;
    const gw = await startGateway(dir, config, workers);
    try {
      await load(gw.url, CONCURRENCY, Math.min(RUNS, 128));
      const { rate, samples } = await load(gw.url, CONCURRENCY, RUNS);
      rates.set(workers, rate);
      results.push({ name: `c=${CONCURRENCY} whole run, ${workers} process(es)`, samples });
      notes.push(`${workers} process(es), c=${CONCURRENCY}: ${rate.toFixed(1)} runs/s (x${(rate / rates.get(WORKERS[0])!).toFixed(2)} of ${WORKERS[0]})`);
    } finally {
      await gw.stop();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await stopServices?.();
}
console.log(`\n## Scale-out: PostgreSQL + Redis, stateless /runs/stream, scripted model (token_delay_ms 0)\n\n${formatTable(results)}\n`);
for (const note of notes) console.log(`- ${note}`);
