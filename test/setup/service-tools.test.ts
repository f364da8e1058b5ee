// The test setup on a machine without PostgreSQL, Redis or bubblewrap: the lookup is pointed at empty temp
// directories (PATH, DEERFLOW_PG_BIN / DEERFLOW_PG_ROOT) instead of uninstalling anything, and apt-get is a script.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureServiceTools, findPgBin, findServiceTools, planProvision, type ServiceTool } from "../support/service-tools.js";

let dir: string;
let bin: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "dftest-tools-"));
  bin = path.join(dir, "bin");
  mkdirSync(bin);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const exe = (file: string, body = "exit 0") => {
  mkdirSync(path.dirname(file), { recursive: true });
  // The scripts' own PATH: the one they are run with is the temp bin directory alone.
  writeFileSync(file, `#!/bin/sh\nPATH=/usr/bin:/bin\n${body}\n`);
  chmodSync(file, 0o755);
};
const all = (found: string | null): ServiceTool[] => ["postgresql", "redis-server", "bubblewrap"].map((pkg) => ({ pkg, found }));

describe("planProvision", () => {
  it("does nothing when every tool is there", () => {
    expect(planProvision(all("/x"), { root: false, aptGet: null })).toEqual({ kind: "ready" });
  });

  it("installs only the missing packages with apt-get as root, with one log line", () => {
    const tools = [{ pkg: "postgresql", found: "/pg" }, { pkg: "redis-server", found: null }, { pkg: "bubblewrap", found: null }];
    const plan = planProvision(tools, { root: true, aptGet: "/usr/bin/apt-get" });
    expect(plan).toEqual({
      kind: "install",
      packages: ["redis-server", "bubblewrap"],
      command: ["/usr/bin/apt-get", "install", "-y", "-qq", "--no-install-recommends", "redis-server", "bubblewrap"],
      log: "test setup: redis-server, bubblewrap missing on this machine: installing with apt-get",
    });
  });

  it("fails with the one command to run when it may not install (not root, or no apt-get)", () => {
    const plan = planProvision(all(null), { root: false, aptGet: "/usr/bin/apt-get" });
    expect(plan).toEqual({
      kind: "fail",
      message:
        "test setup: postgresql, redis-server, bubblewrap missing on this machine; install them first: " +
        "sudo apt-get update && sudo apt-get install -y -qq --no-install-recommends postgresql redis-server bubblewrap",
    });
    const noApt = planProvision(all(null), { root: true, aptGet: null });
    expect(noApt.kind === "fail" && noApt.message).toContain("install them first: apt-get update && apt-get install");
  });
});

describe("findServiceTools", () => {
  it("finds nothing on a PATH and PostgreSQL directory without the programs", () => {
    const tools = findServiceTools({ PATH: bin, DEERFLOW_PG_BIN: path.join(dir, "pg") });
    expect(tools).toEqual(all(null));
    // With the services given as URLs only bubblewrap is needed.
    expect(findServiceTools({ PATH: bin }, false)).toEqual([{ pkg: "bubblewrap", found: null }]);
  });

  it("finds redis-server only with redis-cli beside it, and bwrap, on PATH", () => {
    exe(path.join(bin, "redis-server"));
    exe(path.join(bin, "bwrap"));
    expect(findServiceTools({ PATH: bin, DEERFLOW_PG_BIN: dir }).map((t) => t.found)).toEqual([null, null, path.join(bin, "bwrap")]);
    exe(path.join(bin, "redis-cli"));
    expect(findServiceTools({ PATH: `/nonexistent:${bin}`, DEERFLOW_PG_BIN: dir })[1]!.found).toBe(path.join(bin, "redis-server"));
  });

  it("picks the newest PostgreSQL version (numerically) that has pg_ctl and initdb", () => {
    const root = path.join(dir, "postgresql");
    for (const v of ["9", "16"]) for (const p of ["pg_ctl", "initdb"]) exe(path.join(root, v, "bin", p));
    exe(path.join(root, "17", "bin", "pg_ctl")); // a half-installed newer version is passed over
    expect(findPgBin({ DEERFLOW_PG_ROOT: root })).toBe(path.join(root, "16", "bin"));
    expect(findPgBin({ DEERFLOW_PG_BIN: path.join(root, "9", "bin") })).toBe(path.join(root, "9", "bin"));
    expect(findPgBin({ DEERFLOW_PG_BIN: path.join(root, "17", "bin") })).toBeNull();
    expect(findPgBin({ DEERFLOW_PG_ROOT: path.join(dir, "none") })).toBeNull();
  });
});

describe("ensureServiceTools", () => {
  const pgRoot = () => path.join(dir, "postgresql");
  const env = () => ({ PATH: bin, DEERFLOW_PG_ROOT: pgRoot() });

  it("as root with apt-get: logs one line, runs apt-get update and install of what is missing, then finds it", () => {
    const calls = path.join(dir, "apt-calls");
    // An apt-get that records its arguments and, on install, puts the programs where the lookup looks.
    exe(
      path.join(bin, "apt-get"),
      `echo "$*" >> ${calls}
case "$1" in install)
  for p in redis-server redis-cli bwrap; do printf '#!/bin/sh\\n' > ${bin}/$p; chmod +x ${bin}/$p; done
  mkdir -p ${pgRoot()}/15/bin; for p in pg_ctl initdb; do printf '#!/bin/sh\\n' > ${pgRoot()}/15/bin/$p; chmod +x ${pgRoot()}/15/bin/$p; done;;
esac`,
    );
    const logs: string[] = [];
    ensureServiceTools(env(), { root: true, log: (l) => logs.push(l) });
    expect(logs).toEqual(["test setup: postgresql, redis-server, bubblewrap missing on this machine: installing with apt-get"]);
    expect(readFileSync(calls, "utf8").trim().split("\n")).toEqual(["update -qq", "install -y -qq --no-install-recommends postgresql redis-server bubblewrap"]);
    expect(findServiceTools(env()).every((t) => t.found !== null)).toBe(true);
    // Found now: a second run installs nothing.
    ensureServiceTools(env(), { root: true, log: (l) => logs.push(l) });
    expect(logs).toHaveLength(1);
  });

  it("reports apt-get's failure, and programs still missing after an install that 'succeeded'", () => {
    exe(path.join(bin, "apt-get"), `[ "$1" = update ] && exit 0; echo "E: Unable to locate package bubblewrap" >&2; exit 100`);
    expect(() => ensureServiceTools(env(), { root: true, log: () => {} })).toThrow(
      "test setup: apt-get install postgresql redis-server bubblewrap failed:\nE: Unable to locate package bubblewrap",
    );
    exe(path.join(bin, "apt-get"));
    expect(() => ensureServiceTools(env(), { root: true, log: () => {} })).toThrow("test setup: postgresql, redis-server, bubblewrap still missing after apt-get install");
  });

  it("without root throws the one command to run, and runs nothing", () => {
    const ran: string[] = [];
    exe(path.join(bin, "apt-get"));
    expect(() => ensureServiceTools(env(), { root: false, run: (f) => ran.push(f) })).toThrow(/^test setup: .* install them first: sudo apt-get update && sudo apt-get install/);
    expect(ran).toEqual([]);
  });

  it("is ready on this machine as it is (the suite's own services are installed)", () => {
    expect(() => ensureServiceTools(process.env, { root: false, run: () => { throw new Error("must not install"); } })).not.toThrow();
  });
});
