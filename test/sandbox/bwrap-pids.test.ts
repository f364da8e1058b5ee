// The bubblewrap provider's process limit that holds for root: a pids cgroup per command (found on cgroup v1 or
// v2), stale groups of a crashed gateway swept at start, commands refused when their group cannot be made, and
// the start-up warning where a root gateway has no writable pids cgroup. The fork-bomb probe itself is in
// bwrap-limits.test.ts.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BubblewrapSandboxProvider } from "../../src/sandbox/bwrap-provider.js";
import { locatePidsCgroup, openPidsRoot, PidsCgroups } from "../../src/sandbox/pids-cgroup.js";
import { captureLogs } from "../support/capture-logs.js";
import { until } from "../support/wait.js";
import { bash, newThread, startBwrapGateway } from "./bwrap-support.js";

const V1_MOUNTINFO = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 30 0:33 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`;

describe("locatePidsCgroup", () => {
  it("finds the gateway's own group on cgroup v1's pids hierarchy, and on cgroup v2 when no v1 pids is mounted", () => {
    expect(locatePidsCgroup(V1_MOUNTINFO, "8:pids:/\n4:memory:/process_api/x\n0::/")).toEqual({ version: 1, dir: "/sys/fs/cgroup/pids" });
    expect(locatePidsCgroup(V1_MOUNTINFO, "8:pids:/jobs/gw\n0::/")).toEqual({ version: 1, dir: "/sys/fs/cgroup/pids/jobs/gw" });
    // A container's view: its cgroup2 mount's root is its own subtree, which /proc/self/cgroup names in full.
    const v2 = "25 20 0:26 /system.slice/gw.service /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate";
    expect(locatePidsCgroup(v2, "0::/system.slice/gw.service/sandboxes")).toEqual({ version: 2, dir: "/sys/fs/cgroup/sandboxes" });
    expect(locatePidsCgroup("25 20 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw", "0::/")).toEqual({ version: 2, dir: "/sys/fs/cgroup" });
    expect(locatePidsCgroup("30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw", "0::/")).toBeNull();
  });

  it("tells why no group can be used where the files say so", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pids-"));
    try {
      const write = (name: string, text: string) => {
        const file = path.join(dir, name);
        writeFileSync(file, text);
        return file;
      };
      const none = openPidsRoot(undefined, { mountinfo: write("mi", "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw"), cgroup: write("cg", "0::/") });
      expect(none).toEqual({ reason: "no cgroup hierarchy with the pids controller is mounted" });
      const v2 = openPidsRoot(undefined, { mountinfo: write("mi2", `25 20 0:26 / ${dir} rw - cgroup2 cgroup2 rw`), cgroup: write("cg2", "0::/") });
      expect(v2).toMatchObject({ reason: expect.stringContaining("cannot be used") });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const pids = openPidsRoot();
const HAS_CGROUP = pids instanceof PidsCgroups;

describe.runIf(HAS_CGROUP)("with a writable pids cgroup (this machine)", () => {
  const groups = pids as PidsCgroups;
  let staleGroup: string;
  let liveGroup: string;
  let sleeper: ReturnType<typeof spawn>;

  beforeAll(async () => {
    // A crashed gateway's group: its owner pid is gone, and a process of it still runs inside.
    const gone = spawnSync("/bin/true").pid!;
    staleGroup = path.join(groups.folder, `${gone}-0badc0ffee00`);
    mkdirSync(staleGroup);
    sleeper = spawn("/bin/sh", ["-c", 'echo $$ > "$1/cgroup.procs" && exec sleep 120', "sh", staleGroup], { stdio: "ignore" });
    await until(() => readFileSync(path.join(staleGroup, "cgroup.procs"), "utf8").trim() === String(sleeper.pid));
    // A live gateway's group (pid 1 stands for another worker): never touched.
    liveGroup = path.join(groups.folder, "1-0badc0ffee01");
    mkdirSync(liveGroup);
  });
  afterAll(async () => {
    sleeper.kill("SIGKILL");
    for (const dir of [liveGroup, staleGroup]) if (existsSync(dir)) rmdirSync(dir);
  });

  it("sweeps a crashed gateway's groups at start (killing what runs there), keeps a live one's, and says pids_cgroup on /health", async () => {
    const h = await startBwrapGateway();
    try {
      const provider = h.app.deerflow.sandbox as BubblewrapSandboxProvider;
      expect(await provider.staleSwept).toBeGreaterThanOrEqual(1);
      expect(existsSync(staleGroup)).toBe(false);
      await until(() => sleeper.exitCode !== null || sleeper.signalCode !== null);
      expect(sleeper.signalCode).toBe("SIGKILL");
      expect(existsSync(liveGroup)).toBe(true);
      expect(await (await fetch(`${h.url}/health`)).json()).toMatchObject({ sandbox: "bubblewrap", sandbox_process_limit: "pids_cgroup" });
      // A command runs inside its own group, which is gone once the command is.
      const t = await newThread(h);
      expect(await bash(h, t, "echo in-group")).toBe("in-group");
      expect(readdirSync(groups.folder).filter((n) => n.startsWith(`${process.pid}-`))).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("sandbox.pids_cgroup: the groups are made under the named directory; a directory that is not a pids cgroup stops the start", async () => {
    const dir = path.join(groups.root.dir, `deerflow-test-${process.pid}-${Date.now()}`);
    const h = await startBwrapGateway(`  pids_cgroup: ${dir}\n  limits: { processes: 16 }`);
    try {
      const t = await newThread(h);
      // The group is there while the command runs: its pids.max is the limit plus bwrap's two.
      const seen = bash(h, t, "for i in $(seq 100); do [ -e go ] && break; sleep 0.1; done; echo done");
      await until(() => readdirSync(path.join(dir, "deerflow-sandbox")).some((n) => n.startsWith(`${process.pid}-`)));
      const group = readdirSync(path.join(dir, "deerflow-sandbox")).find((n) => n.startsWith(`${process.pid}-`))!;
      expect(readFileSync(path.join(dir, "deerflow-sandbox", group, "pids.max"), "utf8").trim()).toBe("18");
      writeFileSync(path.join((h.app.deerflow.sandbox as BubblewrapSandboxProvider).dirsFor(t).workspace, "go"), "");
      expect(await seen).toBe("done");
      expect(readdirSync(path.join(dir, "deerflow-sandbox")).filter((n) => n.startsWith(`${process.pid}-`))).toEqual([]);
    } finally {
      await h.close();
      rmdirSync(path.join(dir, "deerflow-sandbox"));
      rmdirSync(dir);
    }
    const plain = mkdtempSync(path.join(tmpdir(), "not-a-cgroup-"));
    try {
      await expect(startBwrapGateway(`  pids_cgroup: ${plain}`)).rejects.toThrow(/sandbox.pids_cgroup .* cannot hold the sandbox's process limits: .*not a pids cgroup/);
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
    // A gateway start, a sandboxed command and a refused start: seconds each on a loaded machine.
  }, 60_000);

  it("refuses to run a command whose group cannot be made, rather than running it unbounded", async () => {
    const home = mkdtempSync(path.join(tmpdir(), "pids-home-"));
    try {
      const broken = new PidsCgroups({ version: 1, dir: path.join(home, "no-such-cgroup") });
      const provider = new BubblewrapSandboxProvider({ baseDir: home, pidsCgroups: broken });
      const sandbox = provider.sandboxFor("t1");
      const result = await sandbox.execute("touch /mnt/user-data/workspace/ran", { timeoutSeconds: 10 });
      expect(result.output).toBe("sandbox: could not create the command's process-limit cgroup (ENOENT)\n");
      expect(result.exitCode).toBeNull();
      expect(existsSync(path.join(provider.dirsFor("t1").workspace, "ran"))).toBe(false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("a root gateway without a writable pids cgroup", () => {
  it("warns once at start that the process limit cannot be enforced, and names `none`", () => {
    const home = mkdtempSync(path.join(tmpdir(), "pids-home-"));
    const logs = captureLogs();
    try {
      const provider = new BubblewrapSandboxProvider({ baseDir: home, pidsCgroups: { reason: "no cgroup hierarchy with the pids controller is mounted" }, root: true });
      expect(provider.processLimit).toBe("none");
      const warnings = logs.lines().filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].msg).toContain("sandbox.limits.processes cannot be enforced: the gateway runs as root");
      expect(warnings[0].msg).toContain("no cgroup hierarchy with the pids controller is mounted");
      const nonRoot = new BubblewrapSandboxProvider({ baseDir: home, pidsCgroups: { reason: "x" }, root: false });
      expect(nonRoot.processLimit).toBe("rlimit");
      expect(logs.lines().filter((l) => l.level === 40)).toHaveLength(1);
    } finally {
      logs.restore();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
