// Bubblewrap provider costs: the time to run `true` in a fresh sandbox (the per-command cost a user pays), and the
// gateway's RSS and /health latency while 20 threads each run a CPU-bound command. Run: npx tsx bench/sandbox-bwrap.ts
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { buildApp } from "../src/app.js";
import { resetAppConfig } from "../src/config/app-config.js";

const dir = mkdtempSync(path.join(tmpdir(), "bench-bwrap-"));
process.env.DEER_FLOW_CONFIG_PATH = path.join(dir, "config.yaml");
process.env.DEER_FLOW_HOME = path.join(dir, "home");
writeFileSync(process.env.DEER_FLOW_CONFIG_PATH, `
models: [{ name: scripted, use: "deerflow-gateway:ScriptedChatModel", model: s, token_delay_ms: 0 }]
tools: [{ name: bash, group: bash, use: "deerflow.sandbox.tools:bash_tool" }]
sandbox: { use: "deerflow-gateway/sandbox:BubblewrapSandboxProvider", bash_command_timeout: 120 }
`);
resetAppConfig();
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const app = await buildApp({ authDisabled: true, heartbeatMs: 0 });
await app.listen({ host: "127.0.0.1", port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const sandbox = app.deerflow.sandbox.sandboxFor("bench", "default");

const trueMs: number[] = [];
for (let i = 0; i < 200; i++) {
  const t0 = performance.now();
  const r = await sandbox.execute("true", { timeoutSeconds: 30 });
  if (r.exitCode !== 0) throw new Error(`true failed: ${r.output}`);
  trueMs.push(performance.now() - t0);
}
console.log(`true in a fresh sandbox (execute, 200 sequential): p50 ${pct(trueMs, 0.5).toFixed(1)} ms, p99 ${pct(trueMs, 0.99).toFixed(1)} ms`);

const health = async (ms: number) => {
  const out: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const t0 = performance.now();
    await (await fetch(`${url}/health`)).text();
    out.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 10));
  }
  return out;
};
const idle = await health(3000);
const rss0 = process.memoryUsage().rss;
const threads = await Promise.all(Array.from({ length: 20 }, async () => (await (await fetch(`${url}/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()).thread_id as string));
const cmd = { command: "timeout 8 sh -c 'while :; do :; done'; echo spun" };
let peakRss = rss0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const runs = Promise.all(threads.map((t) => fetch(`${url}/threads/${t}/runs/wait`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: { messages: [{ role: "user", content: `!call bash ${JSON.stringify(cmd)}` }] } }) }).then((r) => r.json())));
await new Promise((r) => setTimeout(r, 1000));
const busy = await health(6000);
const results = await runs;
clearInterval(rssTimer);
const ok = results.filter((v: { messages: { type: string; content: string }[] }) => v.messages.filter((m) => m.type === "tool").at(-1)?.content === "spun").length;
console.log(`/health idle: p50 ${pct(idle, 0.5).toFixed(1)} ms, p99 ${pct(idle, 0.99).toFixed(1)} ms (${idle.length} samples)`);
console.log(`/health with 20 threads each running an 8 s CPU-bound shell loop: p50 ${pct(busy, 0.5).toFixed(1)} ms, p99 ${pct(busy, 0.99).toFixed(1)} ms (${busy.length} samples); ${ok}/20 commands finished`);
console.log(`gateway RSS: ${(rss0 / 2 ** 20).toFixed(0)} MiB before, peak ${(peakRss / 2 ** 20).toFixed(0)} MiB during; load ${loadavg()[0].toFixed(1)} on ${cpus().length} cores`);
await app.close();
rmSync(dir, { recursive: true, force: true });
