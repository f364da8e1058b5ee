import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapStatus } from "../../src/sandbox/bubblewrap.js";
import { runHostCommand, type RunResult } from "../../src/sandbox/host-bash.js";
import { postJson, startHarness, uploadFiles, type Harness } from "../support/harness.js";
import { until } from "../support/wait.js";

// Issue 42, items 3-5: sandboxed code (real bubblewrap) swaps a directory of its thread for a symlink in a loop
// while the gateway serves artifact downloads and uploads; the gateway must never follow the symlink. And the
// sandbox must not learn the thread's host path from /proc/self/mountinfo.
const CONFIG =
  "models:\n  - name: s\n    use: deerflow-gateway:ScriptedChatModel\n    model: s\n" +
  "sandbox:\n  allow_host_bash: true\n" +
  "tool_groups:\n  - name: bash\n" +
  "tools:\n  - name: bash\n    group: bash\n    use: deerflow.sandbox.tools:bash_tool\n" +
  "  - name: grep\n    group: bash\n    use: deerflow.sandbox.tools:grep_tool\n" +
  "  - name: glob\n    group: bash\n    use: deerflow.sandbox.tools:glob_tool\n";
const SECRET = "TOP-SECRET-RACE-7d1e";
const ATTEMPTS = 400;
const CONCURRENCY = 8;
const status = bubblewrapStatus();

let h: Harness;
let origin: string;
const userData = (thread: string) => path.join(h.dir, ".deer-flow", "users", "default", "threads", thread, "user-data");

beforeAll(async () => {
  h = await startHarness(CONFIG);
  origin = new URL(h.url).origin;
});
afterAll(async () => h.close());

/**
 * Starts a perl loop inside bubblewrap on `thread`'s user-data: in `dir` (virtual), entry `name` is moved aside,
 * replaced by a symlink to `target` (a host path), and moved back, until `/mnt/user-data/workspace/stop` exists
 * (or 120 s pass). Resolves when the loop has run at least once; `done` gives its output (the iteration count).
 */
async function startSwapper(thread: string, dir: string, name: string, target: string): Promise<{ stop: () => Promise<RunResult> }> {
  const root = userData(thread);
  const script =
    `chdir "${dir}" or die "chdir: $!"; my ($n, $t0) = (0, time); ` +
    `while (!-e "/mnt/user-data/workspace/stop" && time - $t0 < 120) { rename "${name}", "${name}.real"; symlink $ARGV[0], "${name}"; ` +
    `unlink "${name}"; rename "${name}.real", "${name}"; $n++; open my $f, ">", "/mnt/user-data/workspace/count"; print $f $n; close $f if $n % 50 == 0 } print "iterations=$n\\n";`;
  const done = runHostCommand(`perl -e '${script}' '${target}'`, { cwd: "/", env: {}, timeoutSeconds: 150, bubblewrap: { bwrap: status.path!, root } });
  await until(async () => readdirSync(path.join(root, "workspace")).includes("count"), 20_000);
  return {
    stop: async () => {
      writeFileSync(path.join(root, "workspace", "stop"), "");
      return done;
    },
  };
}

/** Runs `attempt` ATTEMPTS times, CONCURRENCY at a time. */
async function hammer<T>(attempt: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ATTEMPTS; i += CONCURRENCY) out.push(...(await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ATTEMPTS - i) }, (_, k) => attempt(i + k)))));
  return out;
}

describe.runIf(status.available)("sandboxed code swapping a directory for a symlink (real bubblewrap)", () => {
  it("never makes an artifact download follow the symlink", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "race-art" });
    const outside = path.join(h.dir, "gateway-private");
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, "f.txt"), SECRET);
    mkdirSync(path.join(userData("race-art"), "outputs", "d"), { recursive: true });
    mkdirSync(path.join(userData("race-art"), "workspace"), { recursive: true });
    writeFileSync(path.join(userData("race-art"), "outputs", "d", "f.txt"), "inside");
    const swapper = await startSwapper("race-art", "/mnt/user-data/outputs", "d", outside);
    const results = await hammer(async () => {
      const res = await fetch(`${origin}/api/threads/race-art/artifacts/mnt/user-data/outputs/d/f.txt`);
      return { status: res.status, body: await res.text() };
    });
    const run = await swapper.stop();
    const escapes = results.filter((r) => r.body.includes(SECRET)).length;
    const refused = results.filter((r) => r.status === 403).length;
    console.log(`artifact race: ${ATTEMPTS} attempts, ${escapes} escapes, ${refused} refused (403), ${results.filter((r) => r.status === 200).length} served; swapper ${run.output.trim()}`);
    expect(escapes).toBe(0);
    // Every answer is the thread's own file, a refusal of the symlink, or "not found" while `d` is moved aside.
    for (const r of results) expect([200, 403, 404]).toContain(r.status);
    for (const r of results.filter((x) => x.status === 200)) expect(r.body).toBe("inside");
    expect(results.some((r) => r.status === 200)).toBe(true);
  }, 180_000);

  it("never lets an upload land in the symlink's target (another thread's uploads)", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "race-up" });
    await postJson(`${h.url}/threads`, { thread_id: "race-victim" });
    const victimUploads = path.join(userData("race-victim"), "uploads");
    mkdirSync(victimUploads, { recursive: true });
    writeFileSync(path.join(victimUploads, "keep.txt"), "victim's");
    mkdirSync(path.join(userData("race-up"), "uploads"), { recursive: true });
    mkdirSync(path.join(userData("race-up"), "workspace"), { recursive: true });
    const swapper = await startSwapper("race-up", "/mnt/user-data", "uploads", victimUploads);
    const results = await hammer(async (i) => {
      const res = await uploadFiles(origin, "race-up", [[`race-${i}.txt`, `upload ${i}`], ["keep.txt", "overwritten"]]);
      return { status: res.status, body: await res.text() };
    });
    const run = await swapper.stop();
    const landed = readdirSync(victimUploads).filter((n) => n !== "keep.txt");
    const refused = results.filter((r) => r.status === 403).length;
    console.log(`upload race: ${ATTEMPTS} attempts, ${landed.length} files in the other thread, ${refused} refused (403), ${results.filter((r) => r.status === 200).length} stored; swapper ${run.output.trim()}`);
    expect(landed).toEqual([]);
    expect(readdirSync(victimUploads)).toEqual(["keep.txt"]);
    for (const r of results) expect([200, 403, 409]).toContain(r.status);
    for (const r of results.filter((x) => x.status !== 200)) expect(JSON.parse(r.body).detail).not.toContain(h.dir);
    expect(results.some((r) => r.status === 200)).toBe(true);
  }, 180_000);

  it("never lets grep or glob walk through the symlink (their results never show the target's files)", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "race-grep" });
    const outside = path.join(h.dir, "gateway-private-grep");
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, "secret-name.txt"), SECRET);
    writeFileSync(path.join(outside, "f.txt"), `TOP-SECRET ${SECRET}`);
    mkdirSync(path.join(userData("race-grep"), "outputs", "d"), { recursive: true });
    mkdirSync(path.join(userData("race-grep"), "workspace"), { recursive: true });
    writeFileSync(path.join(userData("race-grep"), "outputs", "d", "f.txt"), "TOP-SECRET-inside");
    const swapper = await startSwapper("race-grep", "/mnt/user-data/outputs", "d", outside);
    const calls = [
      `!call grep ${JSON.stringify({ description: "d", pattern: "TOP-SECRET", path: "/mnt/user-data/outputs" })}`,
      `!call grep ${JSON.stringify({ description: "d", pattern: "TOP-SECRET", path: "/mnt/user-data/outputs/d" })}`,
      `!call glob ${JSON.stringify({ description: "d", pattern: "**/*.txt", path: "/mnt/user-data/outputs" })}`,
    ];
    const results: string[] = [];
    // Each attempt is a whole run on the thread (model, tool, checkpoint), one at a time: fewer than the HTTP races.
    for (let i = 0; i < 120; i++) {
      const res = await postJson(`${h.url}/threads/race-grep/runs/wait`, { input: { messages: [{ role: "user", content: calls[i % calls.length] }] } });
      const values = await res.json();
      results.push(String(values.messages?.filter((m: { type: string }) => m.type === "tool").at(-1)?.content));
    }
    const run = await swapper.stop();
    const escapes = results.filter((r) => r.includes(SECRET) || r.includes("secret-name")).length;
    console.log(`grep/glob race: ${results.length} runs, ${escapes} escapes; swapper ${run.output.trim()}; e.g. ${JSON.stringify(results.slice(0, 3))}`);
    expect(escapes).toBe(0);
    expect(results.some((r) => r.includes("TOP-SECRET-inside") || r.includes("f.txt"))).toBe(true);
  }, 240_000);

  it("shows the sandbox no host path in /proc/self/mountinfo (or anywhere in /proc)", async () => {
    await postJson(`${h.url}/threads`, { thread_id: "mounts" });
    const res = await postJson(`${h.url}/threads/mounts/runs/wait`, {
      input: { messages: [{ role: "user", content: `!call bash ${JSON.stringify({ command: "p=$(printf '\\x2fproc'); cat $p/self/mountinfo $p/self/mounts $p/1/mountinfo 2>&1; grep -rs user-data $p 2>/dev/null | head; echo end" })}` }] },
    });
    const values = await res.json();
    const out = String(values.messages.find((m: { type: string }) => m.type === "tool")?.content);
    // The tool masks the literal host path in its output; check the raw run too, through the host-bash runner.
    mkdirSync(path.join(userData("mounts"), "workspace"), { recursive: true });
    const raw = await runHostCommand("cat /proc/self/mountinfo /proc/self/mounts 2>&1; grep -rsl users /proc 2>/dev/null; true", {
      cwd: "/",
      env: {},
      timeoutSeconds: 30,
      bubblewrap: { bwrap: status.path!, root: userData("mounts") },
    });
    console.log(`mountinfo in the sandbox: ${JSON.stringify(raw.output)}`);
    for (const text of [out, raw.output]) {
      expect(text).not.toContain(h.dir);
      expect(text).not.toContain("/users/default/threads");
      expect(text).not.toContain(".deer-flow");
    }
    expect(out).toContain("mountinfo");
    expect(out).toContain("end");
    expect(raw.exitCode).toBe(0);
  }, 60_000);
});
