// The gateway's own cost of web_fetch (issue 44): CPU per fetch of a 1 MB HTML page through the direct fetcher
// (GET, size cap, Readability + turndown, cap at 4,096 characters), p50/p99 over N sequential fetches, and the peak
// RSS while 50 fetches run at once. The page is served by a child process, so its CPU is not counted here.
// Each fetch asks for a distinct URL, so the result cache never answers. Run: node --import tsx bench/web-fetch.bench.ts
import { fork } from "node:child_process";
import { parseAppConfigText } from "../src/config/app-config.js";
import { web_fetch_tool } from "../src/web/index.js";

const N = Number(process.env.N ?? 60);
const CONCURRENT = 50;

if (process.argv[2] === "--serve") {
  const { startFakeWebServer } = await import("../test/support/fakes/web-server.js");
  const server = await startFakeWebServer();
  process.send?.(server.url);
} else {
  const child = fork(new URL(import.meta.url).pathname, ["--serve"], { execArgv: ["--import", "tsx"] });
  const base = await new Promise<string>((resolve) => child.once("message", (m) => resolve(String(m))));
  const yaml = "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\ntools:\n  - name: web_fetch\n    group: web\n    use: deerflow-gateway/web:web_fetch_tool\n    allow_private_addresses: true\n    timeout: 60\n";
  const config = { context: { app_config: parseAppConfigText(yaml, "bench.yaml", {}), thread_id: "bench", user_id: "bench" } };
  const fetchOnce = (i: number) => web_fetch_tool.invoke({ url: `${base}/big?i=${i}` }, config) as Promise<string>;
  for (let i = 0; i < 5; i++) await fetchOnce(-1 - i); // warm-up (JIT, connection pool)
  const cpu: number[] = [];
  for (let i = 0; i < N; i++) {
    const before = process.cpuUsage();
    const out = await fetchOnce(i);
    const used = process.cpuUsage(before);
    if (!out.startsWith("# Big")) throw new Error(`unexpected result: ${out.slice(0, 200)}`);
    cpu.push((used.user + used.system) / 1000);
  }
  cpu.sort((a, b) => a - b);
  const pct = (p: number) => cpu[Math.min(cpu.length - 1, Math.floor((p / 100) * cpu.length))];
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => fetchOnce(10_000 + i)));
  clearInterval(sampler);
  const ok = results.filter((r) => r.startsWith("# Big")).length;
  const mb = (b: number) => (b / 1024 / 1024).toFixed(0);
  console.log(`web_fetch of a 1 MB page, gateway CPU per fetch over ${N}: p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms (min ${cpu[0].toFixed(1)}, max ${cpu.at(-1)!.toFixed(1)})`);
  console.log(`${CONCURRENT} fetches at once: ${ok} ok in ${((performance.now() - started) / 1000).toFixed(1)} s; RSS ${mb(rssBefore)} MB before, peak ${mb(peak)} MB`);
  child.kill();
}
