// A pids cgroup per sandbox command: the process limit that holds when the gateway runs as root. RLIMIT_NPROC
// (`ulimit -u`) is not enforced for processes whose real user is root, and bwrap's user namespace maps the sandbox
// to the gateway's uid, so as root a fork bomb would be bounded only by the timeout. The kernel's pids controller
// counts every task in the group whatever its uid: fork fails with EAGAIN at `pids.max`, and `pids.events` says so.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { mkdir, readFile, readdir, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { randomBytes } from "node:crypto";

/** The folder under the pids root that holds one group per command (`<gateway pid>-<random>`). */
export const CGROUP_FOLDER = "deerflow-sandbox";
/** Tasks of bwrap itself in the group besides the command's (its outer process and the namespace's pid 1). */
export const BWRAP_TASKS = 2;

/** Where the per-command groups are made: a writable pids cgroup directory and its hierarchy's version. */
export interface PidsCgroupRoot {
  version: 1 | 2;
  /** `<pids mount>/<the gateway's own cgroup>`; groups go under `<dir>/deerflow-sandbox/`. */
  dir: string;
}

/**
 * Finds the gateway's own pids cgroup directory from `/proc/self/mountinfo` and `/proc/self/cgroup` (passed in as
 * text so the parsing is testable): cgroup v1 where a `cgroup` mount carries the `pids` controller, else cgroup v2
 * where the unified hierarchy lists `pids` in the own group's `cgroup.controllers` (checked by {@link openPidsRoot}).
 * Returns null when neither hierarchy is mounted.
 */
export function locatePidsCgroup(mountinfo: string, selfCgroup: string): PidsCgroupRoot | null {
  const mounts = mountinfo.split("\n").map((line) => {
    const [pre, post] = line.split(" - ");
    const fields = pre?.split(" ") ?? [];
    const [fstype, , superOptions] = post?.split(" ") ?? [];
    return { root: fields[3] ?? "/", point: unescapeMount(fields[4] ?? ""), fstype, options: (superOptions ?? "").split(",") };
  });
  const groups = selfCgroup.split("\n").map((line) => {
    const [, controllers, group] = /^\d+:([^:]*):(.*)$/.exec(line.trim()) ?? [];
    return { controllers: controllers?.split(",") ?? [], group };
  });
  const v1 = mounts.find((m) => m.fstype === "cgroup" && m.options.includes("pids"));
  const v1Group = groups.find((g) => g.controllers.includes("pids"));
  if (v1 && v1Group?.group !== undefined) return { version: 1, dir: join(v1.point, v1.root, v1Group.group) };
  const v2 = mounts.find((m) => m.fstype === "cgroup2");
  const v2Group = groups.find((g) => g.controllers.length === 1 && g.controllers[0] === "");
  if (v2 && v2Group?.group !== undefined) return { version: 2, dir: join(v2.point, v2.root, v2Group.group) };
  return null;
}

/** `<mount point>` + the group's path relative to the mount's root (a container's mount shows only its subtree). */
function join(point: string, root: string, group: string): string {
  const rel = root !== "/" && (group === root || group.startsWith(`${root}/`)) ? group.slice(root.length) : group;
  return path.join(point, rel).replace(/(.)\/+$/, "$1");
}

/** mountinfo escapes spaces and the like as octal (`\040`). */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * The per-command groups of one gateway process, under `<root>/deerflow-sandbox/`. Built by {@link openPidsRoot}.
 */
export class PidsCgroups {
  /** The folder holding the groups. */
  readonly folder: string;

  constructor(readonly root: PidsCgroupRoot) {
    this.folder = path.join(root.dir, CGROUP_FOLDER);
  }

  /**
   * A new group for one command whose `pids.max` is `max` tasks (processes and threads, bwrap's own included).
   * @throws the file system's error when the group cannot be made (the command must not run unbounded).
   */
  async create(max: number): Promise<CommandCgroup> {
    const dir = path.join(this.folder, `${process.pid}-${randomBytes(6).toString("hex")}`);
    await mkdir(dir);
    try {
      await writeFile(path.join(dir, "pids.max"), String(max));
    } catch (err) {
      await rmdir(dir).catch(() => undefined);
      throw err;
    }
    return new CommandCgroup(dir, this.root.version);
  }

  /**
   * Removes the groups of gateway processes that are gone (a crash leaves its groups, maybe with processes in
   * them): kills what is left in each, then removes it. Groups of live gateways (other workers) are kept.
   * @returns how many groups were removed.
   */
  async sweepStale(): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.folder).catch(() => [] as string[])) {
      const owner = Number(/^(\d+)-[0-9a-f]+$/.exec(name)?.[1]);
      if (!owner || owner === process.pid || alive(owner)) continue;
      if (await new CommandCgroup(path.join(this.folder, name), this.root.version).release()) removed++;
    }
    return removed;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** One command's pids group: joined by the launcher before it execs bwrap; killed and removed after the command. */
export class CommandCgroup {
  constructor(
    /** The group's directory (`.../deerflow-sandbox/<pid>-<id>`). */
    readonly dir: string,
    private readonly version: 1 | 2,
  ) {}

  /** Whether a fork in the group has failed at `pids.max` (the `max` counter of `pids.events`). */
  async limitHit(): Promise<boolean> {
    const events = await readFile(path.join(this.dir, "pids.events"), "utf8").catch(() => "");
    return /^max (\d+)$/m.test(events) && Number(/^max (\d+)$/m.exec(events)![1]) > 0;
  }

  /** Highest number of tasks the group held (`pids.peak`), or null where the kernel has no such file. */
  peak(): number | null {
    try {
      return Number(readFileSync(path.join(this.dir, "pids.peak"), "utf8"));
    } catch {
      return null;
    }
  }

  /** SIGKILLs every process in the group now (v2: `cgroup.kill`; v1: each pid of `cgroup.procs`). */
  async kill(): Promise<number> {
    if (this.version === 2) await writeFile(path.join(this.dir, "cgroup.kill"), "1").catch(() => undefined);
    const pids = (await readFile(path.join(this.dir, "cgroup.procs"), "utf8").catch(() => "")).split("\n").filter(Boolean).map(Number);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    return pids.length;
  }

  /**
   * Kills every process left in the group until it is empty (a process may fork between the read and the kill;
   * `pids.max` bounds how many), then removes the group. Gives up after ~5 s.
   * @returns whether the group was removed.
   */
  async release(): Promise<boolean> {
    for (let i = 0; i < 250; i++) {
      const left = await this.kill();
      try {
        await rmdir(this.dir);
        return true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return true;
        if (code !== "EBUSY") return false;
      }
      await new Promise((r) => setTimeout(r, left ? 5 : 20));
    }
    return false;
  }
}

/** Files {@link openPidsRoot} reads (tests pass others). */
const PROC_FILES = { mountinfo: "/proc/self/mountinfo", cgroup: "/proc/self/cgroup" };

/**
 * Opens the pids root for the sandbox's groups when this machine has a writable one: `configured` (the
 * `sandbox.pids_cgroup` directory) or else the gateway's own pids cgroup. Checks the pids controller is there (v2:
 * listed in `cgroup.controllers`, and enabled for the groups by writing `+pids` to `cgroup.subtree_control` on the
 * way down), makes `deerflow-sandbox/` and proves a group with a `pids.max` can be made in it. Synchronous: runs
 * once, when the provider starts.
 * @returns the groups, or the reason none can be used (shown in the start-up warning or error).
 */
export function openPidsRoot(configured?: string, procFiles = PROC_FILES): PidsCgroups | { reason: string } {
  let root: PidsCgroupRoot | null;
  try {
    root = configured
      ? { version: existsSync(path.join(configured, "cgroup.controllers")) ? 2 : 1, dir: path.resolve(configured) }
      : locatePidsCgroup(readFileSync(procFiles.mountinfo, "utf8"), readFileSync(procFiles.cgroup, "utf8"));
  } catch (err) {
    return { reason: `cannot read the process's cgroups (${(err as Error).message})` };
  }
  if (!root) return { reason: "no cgroup hierarchy with the pids controller is mounted" };
  const groups = new PidsCgroups(root);
  try {
    if (root.version === 2 && !readFileSync(path.join(root.dir, "cgroup.controllers"), "utf8").split(/\s+/).includes("pids")) {
      return { reason: `the pids controller is not enabled for ${root.dir} (cgroup v2: add it to the parent's cgroup.subtree_control)` };
    }
    if (root.version === 2) enablePids(root.dir);
    mkdirSync(groups.folder, { recursive: true });
    if (root.version === 2) enablePids(groups.folder);
    // Proves the kernel takes a limit here: a read-only or foreign hierarchy, or a plain directory, fails now.
    const probe = path.join(groups.folder, `${process.pid}-${randomBytes(6).toString("hex")}`);
    mkdirSync(probe);
    try {
      if (!existsSync(path.join(probe, "pids.max"))) throw new Error("not a pids cgroup: a new group has no pids.max");
      writeFileSync(path.join(probe, "pids.max"), "1");
    } finally {
      rmdirSync(probe);
    }
  } catch (err) {
    return { reason: `${groups.folder} cannot be used (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  return groups;
}

/** cgroup v2: children of `dir` get `pids.max` only once `pids` is in its `cgroup.subtree_control`. */
function enablePids(dir: string): void {
  const enabled = readFileSync(path.join(dir, "cgroup.subtree_control"), "utf8");
  if (!enabled.split(/\s+/).includes("pids")) writeFileSync(path.join(dir, "cgroup.subtree_control"), "+pids");
}
