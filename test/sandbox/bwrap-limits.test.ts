// Escape and exhaustion probes against the bubblewrap provider, each over HTTP with `!call bash` (the 50-at-once
// probe through the bound tool: a thread runs one run, and a run's model calls one tool, at a time). Each must end
// with a clear tool result within its limit while /health stays fast and other threads are untouched.
import { readFileSync, readdirSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildRunContext } from "../../src/agents/run-context.js";
import { bashTool } from "../../src/tools/sandbox/index.js";
import { postJson, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";
import { bash, lastTool, newThread, say, startBwrapGateway } from "./bwrap-support.js";

const LIMITS = `  bash_command_timeout: 8
  limits:
    cpu_seconds: 1
    memory_mb: 256
    processes: 64
    file_size_mb: 8
    output_mb: 1
    disk_quota_mb: 16
    tmp_mb: 4
    concurrent_per_thread: 2
`;
const CANARY = "sk-canary-bwrap-7f3a";
let h: Harness;
let port: string;
/** /health latencies (ms) sampled while a probe runs. */
let samples: number[] = [];
let sampling = false;
let sampler: Promise<void> = Promise.resolve();

beforeAll(async () => {
  process.env.BWRAP_TEST_SECRET = CANARY;
  h = await startBwrapGateway(LIMITS);
  port = new URL(h.url).port;
});
afterAll(async () => {
  delete process.env.BWRAP_TEST_SECRET;
  await h.close();
});

/** Runs `probe` while sampling GET /health every 10 ms; returns the probe's value and the p99 latency. */
async function withHealth<T>(probe: () => Promise<T>): Promise<{ value: T; p99: number }> {
  samples = [];
  sampling = true;
  sampler = (async () => {
    while (sampling) {
      const t0 = performance.now();
      expect((await fetch(`${h.url}/health`)).status).toBe(200);
      samples.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    const value = await probe();
    const p = p99();
    console.info(`/health p99 ${p.toFixed(1)} ms over ${samples.length} samples (bound ${HEALTH_P99_MS.toFixed(0)} ms, load ${loadavg()[0].toFixed(1)})`);
    return { value, p99: p };
  } finally {
    sampling = false;
    await sampler;
  }
}
const p99 = () => [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))] ?? 0;
/**
 * The /health p99 bound the probes assert: a freeze guard (200 ms, scaled up by the machine's load per core when it
 * is above 1), not the 50 ms goal itself. A timed test cannot hold a 50 ms tail on a CI machine running the rest of
 * the suite beside it (the test process is also the gateway's); each probe prints its measured p99, and
 * bench/sandbox-bwrap.ts measures the goal on a quiet machine.
 */
const HEALTH_P99_MS = 200 * Math.max(1, loadavg()[0] / cpus().length);

/** Processes on the host whose command line contains `marker`. */
function processesWith(marker: string): number {
  let n = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)) n++;
    } catch {
      // gone
    }
  }
  return n;
}

/** {@link processesWith} without blocking the event loop (the gateway under test shares it). */
async function countWith(marker: string): Promise<number> {
  const pids = (await readdir("/proc")).filter((p) => /^\d+$/.test(p));
  const lines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")));
  return lines.filter((l) => l.includes(marker)).length;
}

describe("exhaustion probes end within their limit", () => {
  it("a fork bomb: stopped at the process limit within seconds, never more processes than the limit, none left", async (ctx) => {
    const health = await (await fetch(`${h.url}/health`)).json();
    // A root gateway without a writable pids cgroup cannot bound processes (the start-up warning says so; see bwrap-pids.test.ts).
    if (health.sandbox_process_limit === "none") ctx.skip();
    const t = await newThread(h);
    const started = Date.now();
    // Bounded even if the limit regresses: a binary tree of subshells 10 deep (at most 2047), each waiting on a
    // FIFO (no CPU) until the 8-second timeout kills them. Every process carries the marker in its command line.
    const bomb = "mkfifo /tmp/hold && exec 3<>/tmp/hold; f(){ if [ $1 -lt 10 ]; then f $(($1+1)) & f $(($1+1)) & fi; read -t 20 -u 3; }; f 0 # fork-marker-91";
    let peak = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        peak = Math.max(peak, await countWith("fork-marker-91"));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const { value, p99: lat } = await withHealth(() => bash(h, t, bomb)).finally(() => (watching = false));
    await watcher;
    console.info(`fork bomb: ${Date.now() - started} ms, peak ${peak} processes carrying the marker (limit 64 + bwrap's 2)`);
    expect(value).toMatch(/^Error: Command hit the process limit of 64 processes in the sandbox \(sandbox.limits.processes\)/);
    expect(Date.now() - started).toBeLessThan(6000);
    expect(peak).toBeGreaterThan(10);
    expect(peak).toBeLessThanOrEqual(64 + 2 + 4);
    await until(() => processesWith("fork-marker-91") === 0);
    expect(lat).toBeLessThan(HEALTH_P99_MS);
  });

  it("`yes > /mnt/user-data/workspace/big`: stopped at the file-size limit; many files: stopped at the quota", async () => {
    const t = await newThread(h);
    const { value, p99: lat } = await withHealth(() => bash(h, t, "yes > /mnt/user-data/workspace/big"));
    expect(value).toContain("Error: Command tried to write a file larger than 8 MiB (sandbox.limits.file_size_mb)");
    const many = await bash(h, t, "for i in 1 2 3; do head -c 7000000 /dev/zero > /mnt/user-data/workspace/f$i; done; echo wrote");
    expect(many).toContain("Error: Disk quota exceeded: this thread's /mnt/user-data may hold at most 16 MiB");
    // Over the quota, writing fails but deleting works, and then writing works again.
    expect(await bash(h, t, "echo more > /mnt/user-data/workspace/more")).toContain("Disk quota exceeded");
    expect(await bash(h, t, "rm -f /mnt/user-data/workspace/f* /mnt/user-data/workspace/big /mnt/user-data/workspace/more && echo freed")).toBe("freed");
    expect(await bash(h, t, "echo ok > /mnt/user-data/workspace/ok && cat /mnt/user-data/workspace/ok")).toBe("ok");
    // write_file checks the quota too.
    await bash(h, t, "head -c 8000000 /dev/zero > /mnt/user-data/workspace/a; head -c 8000000 /dev/zero > /mnt/user-data/workspace/b");
    expect(lastTool(await say(h, t, `!call write_file ${JSON.stringify({ path: "/mnt/user-data/workspace/w.txt", content: "x".repeat(1_000_000) })}`))).toContain("Error: Disk quota exceeded");
    expect(lat).toBeLessThan(HEALTH_P99_MS);
  });

  it("a 10-minute sleep: killed at the configured 8-second timeout", async () => {
    const t = await newThread(h);
    const started = Date.now();
    const { value, p99: lat } = await withHealth(() => bash(h, t, "sleep 600"));
    expect(value).toContain("Error: Command timed out after 8 seconds and was killed with all its processes (sandbox.bash_command_timeout)");
    expect(Date.now() - started).toBeLessThan(14_000);
    expect(lat).toBeLessThan(HEALTH_P99_MS);
  });

  it("CPU, memory and /tmp: each named in the result", async () => {
    const t = await newThread(h);
    expect(await bash(h, t, "python3 -c 'while True: pass'")).toContain("exceeded the CPU time limit of 1 seconds");
    expect(await bash(h, t, "python3 -c 'x = bytearray(512 * 1024 * 1024)'")).toContain("ran out of memory: the limit is 256 MiB");
    expect(await bash(h, t, "head -c 8000000 /dev/zero > /tmp/big")).toContain("filled the sandbox's /tmp or /dev/shm (4 MiB each");
  });

  it("1 GB of output: killed past 1 MiB, the result keeps head and tail", async () => {
    const t = await newThread(h);
    const started = Date.now();
    const { value, p99: lat } = await withHealth(() => bash(h, t, "yes | head -c 1000000000"));
    // With tool_output on (upstream's default) a long result reaches the model as a synopsis holding the error line.
    expect(value).toMatch(/Error: Command produced more than 1 MiB of output and was killed/);
    expect(value.length).toBeLessThanOrEqual(20_000);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lat).toBeLessThan(HEALTH_P99_MS);
  });

  it("a 1 MB command: refused with a clear message", async () => {
    const t = await newThread(h);
    const out = await bash(h, t, `echo ${"a".repeat(1024 * 1024)}`);
    expect(out).toMatch(/^Error: Command is too long \(1048581 characters; the limit is 65536\)/);
  });

  it("50 commands at once in one thread: two run, the rest are refused; another thread is untouched", async () => {
    const t = await newThread(h);
    const other = await newThread(h);
    const context = buildRunContext({ threadId: t, userId: "default", appConfig: h.app.deerflow.getAppConfig(), sandboxProvider: h.app.deerflow.sandbox });
    const invoke = (command: string) => (bashTool as unknown as { invoke(i: unknown, c: unknown): Promise<string> }).invoke({ command }, { context: { ...context }, state: {} });
    const { value, p99: lat } = await withHealth(async () => {
      const all = Array.from({ length: 50 }, (_, i) => invoke(`sleep 1; echo done-${i}`));
      const otherResult = bash(h, other, "echo other-thread-fine");
      return { results: await Promise.all(all), other: await otherResult };
    });
    const done = value.results.filter((r) => /^done-\d+$/.test(r));
    const refused = value.results.filter((r) => r.startsWith("Error: Too many commands running: the limit is 2 commands at once per thread (sandbox.limits.concurrent_per_thread)"));
    expect(done.length).toBe(2);
    expect(refused.length).toBe(48);
    expect(value.other).toBe("other-thread-fine");
    // This test's own process makes the 50 tool calls (spawns included) beside the gateway, so its /health tail
    // is bounded against a freeze (half a second), not the 50 ms the other probes hold; the bench reports it.
    console.log(`50 commands: /health p99 ${lat.toFixed(1)} ms`);
    expect(lat).toBeLessThan(Math.max(500, HEALTH_P99_MS));
  });
});

describe("escape probes find nothing", () => {
  it("no environment, /proc/*/environ, /etc/shadow, gateway files or other users' files", async () => {
    const t = await newThread(h);
    const home = process.env.DEER_FLOW_HOME!;
    const out = await bash(h, t, `cat /proc/*/environ; cat /proc/1/environ; env; cat /etc/shadow; ls ${process.cwd()}; ls ${home}; ls ${home}/users; grep -rs ${CANARY} /proc /etc /tmp /mnt /dev; true`);
    expect(out).not.toContain(CANARY);
    expect(out).toContain("/etc/shadow: No such file or directory");
    expect(out).toContain(`ls: cannot access '${process.cwd()}': No such file or directory`);
    expect(out).toContain(`ls: cannot access '${home}': No such file or directory`);
    expect(out).toContain("/proc/1/environ: No such file or directory");
  });

  it("no network: neither the gateway on 127.0.0.1 nor an outside address", async () => {
    const t = await newThread(h);
    expect(await bash(h, t, `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)).toContain("Connection refused");
    expect(await bash(h, t, "timeout 2 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' && echo connected")).toContain("Network is unreachable");
  });

  it("network: full shares the host's network (the gateway is reachable)", async () => {
    const full = await startBwrapGateway("  network: full");
    try {
      const t = await newThread(full);
      expect(await bash(full, t, `exec 3<>/dev/tcp/127.0.0.1/${new URL(full.url).port} && echo connected`)).toBe("connected");
    } finally {
      await full.close();
    }
  });

  it("a symlink to / planted in the workspace leads nowhere for the gateway", async () => {
    const t = await newThread(h);
    expect(await bash(h, t, "ln -s / /mnt/user-data/workspace/root && ln -s / /mnt/user-data/outputs/root && ls /mnt/user-data/workspace/root/")).toContain("usr");
    expect(lastTool(await say(h, t, '!call read_file {"path": "/mnt/user-data/workspace/root/etc/passwd"}'))).toMatch(/^Error: .*symlink/);
    const res = await fetch(`${h.url}/api/threads/${t}/artifacts/mnt/user-data/outputs/root/etc/passwd`);
    expect([403, 404]).toContain(res.status);
    expect(await res.text()).not.toContain("root:x:0");
    expect((await postJson(`${h.url}/threads/${t}/runs/wait`, { input: { messages: [{ role: "user", content: "hi" }] } })).status).toBe(200);
  });
});
