// A Redis server of one test's own, in its temp dir on a free port, that the test can stop and start again (fault
// tests: the shared server of vitest.global-setup.ts must never go down). Persistence is the append-only file with
// an fsync per write (`--appendonly yes --appendfsync always`), so a restart keeps every stream entry acknowledged.
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "./gateway-process.js";

/** A private Redis server. */
export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>/0` */
  url: string;
  /** Stops the server (SIGTERM: Redis flushes the append-only file and exits) and waits for the exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
}

/**
 * Starts `redis-server` with its data under `dir` (AOF, fsync always, no RDB snapshots); call `stop()` in afterAll.
 * @throws Error with the server's output when it does not come up within 20 s.
 */
export async function startPrivateRedis(dir: string): Promise<PrivateRedis> {
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no"];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const proc = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    child = proc;
    let out = "";
    exited = new Promise((resolve) => proc.once("exit", () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail("did not start within 20 s"), 20_000);
      function fail(why: string) {
        clearTimeout(timer);
        proc.kill("SIGKILL");
        reject(new Error(`redis-server on ${port} ${why}:\n${out}`));
      }
      const onData = (d: Buffer) => {
        out += d;
        if (/Ready to accept connections/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout!.on("data", onData);
      proc.stderr!.on("data", onData);
      proc.once("exit", () => fail("exited"));
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}/0`,
    start,
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
