// The server's logger in a real child process writing to a real stdout pipe: batched lines still arrive while the
// process runs, nothing is lost on exit, lines are never split or reordered, secrets are redacted.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const children = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of children) c.kill("SIGKILL");
  children.clear();
});

interface Child {
  /** Resolves with stdout once the process has written `lines` complete lines (rejects if it exits first). */
  lines(count: number): Promise<string[]>;
  /** Closes the child's stdin (the scripts below exit then) and resolves with all of stdout at exit. */
  end(): Promise<string[]>;
  exited: Promise<number | null>;
  /** Stops / restarts reading the child's stdout (a stalled log shipper). */
  pause(): void;
  resume(): void;
  /** Resolves once the child has written `text` to stderr (its scripts say there how far they got). */
  said(text: string): Promise<void>;
}

/** Runs `body` in a child that has `log = createLogger("info")`; the child exits when its stdin closes. */
function run(body: string): Child {
  const script = `
    import { createLogger } from ${JSON.stringify(path.join(root, "src/logger.ts"))};
    const log = createLogger("info");
    process.stdin.on("data", () => {}).on("end", () => process.exit(0));
    ${body}`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "production" } });
  children.add(child);
  let out = "";
  const waiters: (() => void)[] = [];
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    for (const w of waiters.splice(0)) w();
  });
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    err += d;
    process.stderr.write(d);
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => {
    for (const w of waiters.splice(0)) w();
    resolve(code);
  }));
  let done = false;
  void exited.then(() => (done = true));
  const complete = () => out.split("\n").slice(0, -1);
  return {
    lines: (count) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (complete().length >= count) resolve(complete());
          else if (done) reject(new Error(`exited after ${complete().length} of ${count} lines`));
          else waiters.push(check);
        };
        check();
      }),
    end: async () => {
      child.stdin.end();
      await exited;
      return complete();
    },
    exited,
    pause: () => child.stdout.pause(),
    resume: () => child.stdout.resume(),
    said: (text) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (err.includes(text)) resolve();
          else if (done) reject(new Error(`exited without saying ${JSON.stringify(text)}`));
          else waiters.push(check);
        };
        check();
      }),
  };
}

describe("createLogger (stdout)", () => {
  it("writes a lone line while the process keeps running (below the batch size)", async () => {
    const child = run(`log.info({ n: 1 }, "lonely line");`);
    // The process stays alive until stdin closes: the line can only come from the periodic flush.
    const lines = await child.lines(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, n: 1, msg: "lonely line" });
    expect(await child.end()).toHaveLength(1);
  });

  it("loses nothing when the process exits right after logging", async () => {
    const child = run(`for (let i = 0; i < 5; i++) log.info({ i }, "before exit"); log.fatal("cannot start"); process.exit(1);`);
    expect(await child.exited).toBe(1);
    const lines = await child.end();
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual([...Array(5).fill("before exit"), "cannot start"]);
  });

  it("keeps every line whole and in order across batches", async () => {
    // Bursts of lines of varied length, some longer than a batch, logged from timers and synchronously.
    const child = run(`
      let i = 0;
      const burst = () => { for (let k = 0; k < 37; k++, i++) log.info({ i, pad: "x".repeat((i * 97) % 3000) }, "line"); };
      burst(); setTimeout(burst, 5); setTimeout(burst, 20); setImmediate(burst);`);
    const lines = await child.lines(148);
    expect(lines.map((l) => JSON.parse(l).i)).toEqual([...Array(148).keys()]);
    await child.end();
  });

  it("writes what is left after a write that was in flight when the flush came (stalled stdout)", async () => {
    // The first of 65 lines of exactly 4 KB is written alone, the other 64 fill four 16 KB writes; the pipe stalls,
    // so a periodic flush finds a write in flight. The small line logged meanwhile must go out once the pipe
    // drains, not only at exit.
    const child = run(`
      const { hostname } = await import("node:os");
      const base = JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, hostname: hostname(), i: "00", pad: "", msg: "big" }).length + 1;
      for (let i = 0; i < 65; i++) log.info({ i: String(i).padStart(2, "0"), pad: "x".repeat(4096 - base) }, "big");
      const { LOG_FLUSH_INTERVAL_MS } = await import(${JSON.stringify(path.join(root, "src/logger.ts"))});
      setTimeout(() => {
        log.info("LAST");
        // A periodic flush has come and gone while the pipe was still stalled.
        setTimeout(() => process.stderr.write("flush passed"), LOG_FLUSH_INTERVAL_MS + 50);
      }, 300);`);
    child.pause();
    await child.said("flush passed");
    child.resume();
    const lines = await child.lines(66);
    expect(lines.slice(0, 65).every((l) => l.length === 4095)).toBe(true);
    expect(JSON.parse(lines[65]!).msg).toBe("LAST");
    await child.end();
  });

  it("writes a warning at once, without waiting for the periodic flush", async () => {
    // The event loop is then blocked, so no timer can fire: only an immediate flush gets both lines out.
    const child = run(`log.info("before"); log.warn("careful"); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);`);
    const lines = await child.lines(2);
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["before", "careful"]);
  });

  it("redacts API keys and authorization headers", async () => {
    const child = run(`log.info({ model: { api_key: "sk-live-secret", apiKey: "sk-other-secret", name: "gpt" }, req: { headers: { authorization: "Bearer tok-secret" } } }, "with keys");`);
    const [line] = await child.lines(1);
    expect(line).not.toMatch(/secret/);
    expect(JSON.parse(line!)).toMatchObject({ model: { api_key: "[redacted]", apiKey: "[redacted]", name: "gpt" }, req: { headers: { authorization: "[redacted]" } } });
    await child.end();
  });
});
