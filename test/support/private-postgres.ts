// A PostgreSQL server of one test's own, in its temp dir on a free port, that the test can stop and start again
// (fault tests: the shared server of vitest.global-setup.ts must never go down). Started as scripts/services.sh
// does: Debian's binaries, trust on loopback only, run as `postgres` when the tests run as root.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readdirSync } from "node:fs";
import { userInfo } from "node:os";
import path from "node:path";
import { freePort } from "./gateway-process.js";

/** A private PostgreSQL server. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  /** Stops the server (fast shutdown: open connections are terminated). */
  stop(): void;
  /** Starts it again on the same port and data. */
  start(): void;
}

const binDir = () => {
  const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(a) - Number(b));
  if (!versions.length) throw new Error("PostgreSQL binaries not found (apt-get install postgresql)");
  return path.join("/usr/lib/postgresql", versions.at(-1)!, "bin");
};

/** Creates the cluster under `dir` (initdb) and starts it; call `stop()` in afterAll. */
export async function startPrivatePostgres(dir: string): Promise<PrivatePostgres> {
  const bin = binDir();
  const root = userInfo().uid === 0;
  const data = path.join(dir, "pg");
  mkdirSync(data, { recursive: true });
  if (root) {
    // PostgreSQL refuses to run as root: the cluster belongs to `postgres`, who must reach it through the temp dir.
    chmodSync(dir, 0o755);
    const ids = execFileSync("id", ["-u", "postgres"]).toString().trim();
    const gid = execFileSync("id", ["-g", "postgres"]).toString().trim();
    chownSync(data, Number(ids), Number(gid));
  }
  const asPg = (cmd: string, args: string[]) => (root ? execFileSync("runuser", ["-u", "postgres", "--", path.join(bin, cmd), ...args], { stdio: "pipe" }) : execFileSync(path.join(bin, cmd), args, { stdio: "pipe" }));
  asPg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"]);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${data} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const start = () => void asPg("pg_ctl", ["-D", data, "-l", path.join(data, "server.log"), "-w", "-t", "60", "-o", options, "start"]);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop: () => void asPg("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]),
  };
}
