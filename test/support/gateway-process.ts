// Real gateway processes (`node --import tsx src/server.ts`, what `npm start` runs) for the scale-out tests.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { until } from "./wait.js";

/**
 * How long a gateway process may take to answer /health after spawn (ms). A cold start transforms the whole server
 * with tsx: about 2 s on a quiet machine, tens of seconds on a loaded 2-core host. A hook that starts processes
 * allows `PROCESS_HOOK_MS`.
 */
export const PROCESS_START_MS = 120_000;
/** Timeout (ms) of a beforeAll that starts up to two gateway processes side by side. */
export const PROCESS_HOOK_MS = PROCESS_START_MS + 30_000;

const root = path.resolve(import.meta.dirname, "../..");

/** A started gateway process. */
export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  output(): string;
  /** Sends `signal` and waits for the exit (SIGKILL if still alive after 15 s). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `src/server.ts` on `port` with `env` (DEER_FLOW_CONFIG_PATH, DEER_FLOW_HOME, ...) and waits until
 * `/health` answers.
 * @throws Error with the process output when it exits or is not ready within 180 s (tsx compiles the sources at start:
 *   on a loaded machine that alone took 30 s).
 */
export async function startGateway(port: number, env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
    cwd: root,
    // Auth off unless the test turns it on (DEER_FLOW_AUTH_DISABLED: "").
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "warn", DEER_FLOW_HEARTBEAT_MS: "0", DEER_FLOW_AUTH_DISABLED: "1", DEER_FLOW_ENV: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve((exitCode = code))));
  const url = `http://127.0.0.1:${port}`;
  try {
    const ready = until(async () => exitCode === undefined && (await fetch(`${url}/health`)).ok, PROCESS_START_MS, 100);
    await Promise.race([ready, exited.then(() => Promise.reject(new Error("exited")))]);
  } catch {
    child.kill("SIGKILL");
    throw new Error(`gateway on ${port} did not start:\n${out}`);
  }
  return {
    child,
    url,
    exited,
    output: () => out,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (exitCode !== undefined) return exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** A loopback TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}
