// Memory of concurrent idle streams: a real server process (as `npm start` runs it) with a scripted model that
// waits a minute before its first token, and 1,000 stateless `POST /runs/stream` requests held open after their
// first `values` frame. Reports what they add to the server's resident memory and V8 heap. Linux (/proc).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import http from "node:http";
import path from "node:path";
import { startBenchGateway } from "./gateway-server.js";
import type { BenchSuite } from "./stats.js";

const STREAMS = Number(process.env.BENCH_IDLE_STREAMS ?? 1000);
const CONFIG = "models:\n  - name: scripted\n    use: deerflow-gateway:ScriptedChatModel\n    model: scripted\n    token_delay_ms: 60000\n";

/** Resident memory in MB, from /proc. */
function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) / 1024;
}

/** The server's V8 heap in use, in MB, from its `/metrics` (prom-client's `nodejs_heap_size_used_bytes`). */
async function heapUsedMb(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1]) / 1048576;
}

/** Opens a stream and resolves once its first `values` frame arrived; `abort` ends it. */
function openStream(url: string, agent: http.Agent, i: number): { ready: Promise<void>; abort: () => void } {
  const body = JSON.stringify({ input: { messages: [{ role: "user", content: `idle ${i}` }] }, stream_mode: ["values", "messages-tuple"] });
  const req = http.request(`${url}/runs/stream`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } });
  const ready = new Promise<void>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("event: values")) resolve();
      });
      res.on("error", () => undefined);
    });
    req.on("error", (err) => reject(err));
  });
  req.end(body);
  return { ready, abort: () => req.destroy() };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What `STREAMS` idle streams add to the server's memory. */
export async function runIdleStreamsBench(): Promise<BenchSuite> {
  const dir = mkdtempSync(path.join(tmpdir(), "deerflow-bench-idle-"));
  const server = await startBenchGateway(dir, CONFIG);
  const agent = new http.Agent({ keepAlive: false, maxSockets: STREAMS + 10 });
  try {
    // Warm the paths (module loading, JIT) with a few streams, then let the heap settle.
    const warm = Array.from({ length: 20 }, (_, i) => openStream(server.url, agent, i));
    await Promise.all(warm.map((s) => s.ready));
    for (const s of warm) s.abort();
    await settle(3000);
    const rss0 = rssMb(server.pid);
    const heap0 = await heapUsedMb(server.url);
    const streams: ReturnType<typeof openStream>[] = [];
    for (let i = 0; i < STREAMS; i++) {
      streams.push(openStream(server.url, agent, i));
      if (i % 50 === 49) await settle(20);
    }
    await Promise.all(streams.map((s) => s.ready));
    await settle(2000);
    const rss1 = rssMb(server.pid);
    const heap1 = await heapUsedMb(server.url);
    for (const s of streams) s.abort();
    const table = [
      "| streams | RSS before MB | RSS with streams MB | RSS added MB | heap added MB | heap per stream KB |",
      "| ---: | ---: | ---: | ---: | ---: | ---: |",
      `| ${STREAMS} | ${rss0.toFixed(0)} | ${rss1.toFixed(0)} | ${(rss1 - rss0).toFixed(0)} | ${(heap1 - heap0).toFixed(0)} | ${(((heap1 - heap0) * 1024) / STREAMS).toFixed(0)} |`,
    ].join("\n");
    return {
      results: [],
      notes: [
        `${STREAMS} stateless /runs/stream requests, each held after its first \`values\` frame while the scripted model waits 60 s for its first token`,
        "RSS from /proc; heap from the server's /metrics (no forced GC: what a scrape would show)",
        "set BENCH_IDLE_STREAMS to change the count",
      ],
      extra: table,
    };
  } finally {
    agent.destroy();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
