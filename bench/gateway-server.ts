// The gateway as the benchmarks run it: built and started as `npm start` does (dist/src/server.js, its V8 flags), on a free
// loopback port, with its config and home in a temp directory, auth off.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
// @ts-expect-error plain ESM script without type declarations
import { v8Flags } from "../scripts/v8-flags.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The V8 heap flags `npm start` puts in NODE_OPTIONS (package.json's start script is their one home). */
function startScriptNodeOptions(): string {
  const start = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;
  return /NODE_OPTIONS="([^$"]*)/.exec(start)?.[1].trim() ?? "";
}

/** A running gateway process. */
export interface BenchGateway {
  url: string;
  pid: number;
  /** SIGTERM, resolved when the process has exited. */
  stop(): Promise<void>;
}

/**
 * Builds the server (scripts/build.mjs), writes `config` to `<dir>/config.yaml` and starts `node <v8 flags> dist/src/server.js`
 * with `DEER_FLOW_HOME=<dir>/home`, auth off (the benchmarks measure runs and read `/metrics`) and `env` on top.
 * Resolves once `/health` answers.
 * @throws Error "server did not start" after `startTimeoutMs` (default 20000 ms).
 */
export async function startBenchGateway(dir: string, config: string, env: Record<string, string> = {}, startTimeoutMs = 20_000): Promise<BenchGateway> {
  writeFileSync(path.join(dir, "config.yaml"), config);
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT });
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const nodeOptions = `${startScriptNodeOptions()} ${process.env.NODE_OPTIONS ?? ""}`.trim();
  // The command-line flags npm start adds (scripts/v8-flags.mjs), for this process's CPUs and environment.
  const flags = (v8Flags({ ...process.env, NODE_OPTIONS: nodeOptions }, os.availableParallelism()) as string).split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...flags, "dist/src/server.js"], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: nodeOptions, HOST: "127.0.0.1", PORT: String(port), DEER_FLOW_CONFIG_PATH: path.join(dir, "config.yaml"), DEER_FLOW_HOME: path.join(dir, "home"), DEER_FLOW_AUTH_DISABLED: "1", DEER_FLOW_ENV: "", LOG_LEVEL: "warn", ...env },
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error("server did not start");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: child.pid!, stop: () => new Promise((resolve) => (child.once("exit", () => resolve()), child.kill("SIGTERM"))) };
}
