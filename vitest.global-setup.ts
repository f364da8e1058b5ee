// Vitest global setup: makes sure PostgreSQL and Redis are reachable for the scale-out tests, and that bubblewrap is
// there for the host-bash isolation tests. Missing programs are installed with apt-get when this process may (root),
// or the run stops with the one command that installs them (test/support/service-tools.ts). When
// DEERFLOW_TEST_PG_URL / DEERFLOW_TEST_REDIS_URL are set (CI, `eval "$(npm run -s services start)"`), they are used
// as they are; otherwise scripts/services.sh starts a private pair (own data dir, free loopback ports) for this run
// and stops it afterwards, so concurrent runs never share or stop each other's servers. A service that cannot
// start fails the run: those tests never skip.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./test/support/gateway-process.js";
import { ensureServiceTools, findPgBin } from "./test/support/service-tools.js";

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "scripts", "services.sh");


export default async function setup(): Promise<(() => void) | undefined> {
  const given = Boolean(process.env.DEERFLOW_TEST_PG_URL && process.env.DEERFLOW_TEST_REDIS_URL);
  try {
    ensureServiceTools(process.env, { services: !given });
  } catch (err) {
    // One line that says what to run, not a stack trace into this file.
    (err as Error).stack = (err as Error).message;
    throw err;
  }
  if (given) return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), "deerflow-test-services-"));
  const env = {
    ...process.env,
    DEERFLOW_PG_BIN: findPgBin(process.env) ?? "",
    DEERFLOW_SERVICES_DIR: dir,
    DEERFLOW_PG_PORT: String(await freePort()),
    DEERFLOW_REDIS_PORT: String(await freePort()),
  };
  // A vitest killed before its teardown (a timeout, Ctrl-C twice) would leave the pair running: a detached watchdog
  // stops it once this process is gone. Polling a pid is the one way to learn that from outside.
  const watchdog = spawn("bash", ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 5; done; bash "$0" stop >/dev/null 2>&1; rm -rf "$1"`, script, dir], { env, detached: true, stdio: "ignore" });
  watchdog.unref();
  const stop = () => {
    watchdog.kill();
    execFileSync("bash", [script, "stop"], { env, stdio: "inherit" });
    rmSync(dir, { recursive: true, force: true });
  };
  let out: string;
  try {
    out = execFileSync("bash", [script, "start"], { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  } catch (err) {
    stop();
    throw err;
  }
  for (const line of out.split("\n")) {
    const m = /^export (DEERFLOW_TEST_(?:PG|REDIS)_URL)=(.+)$/.exec(line.trim());
    if (m) process.env[m[1]] = m[2];
  }
  if (!process.env.DEERFLOW_TEST_PG_URL || !process.env.DEERFLOW_TEST_REDIS_URL) throw new Error("scripts/services.sh start did not report the service URLs");
  return stop;
}
