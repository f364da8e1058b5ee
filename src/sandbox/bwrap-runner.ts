// One command of the bubblewrap provider: `bwrap` (namespaces, read-only system, the thread's /mnt/user-data) around
// a shell that first lowers its own rlimits, then runs the command. Timeout, output cap, disk watch and abort kill
// the whole sandbox; which limit ended the command is read from the kernel's signal or error where it fired.
import { spawn } from "node:child_process";
import { bubblewrapArgs } from "./bubblewrap.js";
import { HeadTail, killGroup, type RunResult } from "./host-bash.js";
import { BWRAP_TASKS, type CommandCgroup, type PidsCgroups } from "./pids-cgroup.js";

/** coreutils `nice`, by absolute path (the gateway's PATH is not trusted here). */
const NICE = "/usr/bin/nice";
/** How often a command's pids group is checked for a fork refused at its limit, in ms. */
const PIDS_POLL_MS = 100;
/**
 * The launcher of a command with a pids group: puts itself (`$$`) in the group (`$1`), then execs bwrap (`$2...`)
 * in place. It forks nothing before joining, so every process of the sandbox is born inside the group.
 */
const JOIN_CGROUP = 'echo $$ > "$1/cgroup.procs" || { echo "sandbox: could not join the process-limit cgroup" >&2; exit 125; }; shift; exec "$@"';

/** Which limit ended a command. */
export type SandboxLimitName = "timeout" | "cpu" | "memory" | "processes" | "file_size" | "disk" | "output" | "tmp";

/** Per-command limits, in the units the kernel and the runner use. */
export interface CommandLimits {
  timeoutSeconds: number;
  cpuSeconds: number;
  memoryBytes: number;
  processes: number;
  /** RLIMIT_FSIZE in bytes (0: no file may grow at all). */
  fileSizeBytes: number;
  outputBytes: number;
  /** Size of /tmp and /dev/shm, each. */
  tmpBytes: number;
  /** Nice value the sandbox runs at (0: the gateway's priority). */
  nice: number;
}

/** Options of {@link runInBubblewrap}. */
export interface BubblewrapRunOptions {
  bwrap: string;
  /** The thread's real `user-data` directory, bound at /mnt/user-data. */
  root: string;
  mounts: readonly { host: string; virtual: string; readOnly: boolean }[];
  network: "none" | "full";
  limits: CommandLimits;
  signal?: AbortSignal;
  /** Polled every `intervalMs` while the command runs; `true` kills it with limit `disk`. */
  watch?: { intervalMs: number; overLimit(): Promise<boolean> };
  /**
   * Where the command's pids group is made (the process limit that holds for root): `pids.max` is
   * `limits.processes` plus bwrap's own tasks; a fork refused there kills the command with limit `processes`, and
   * whatever is left in the group after the command is killed. Absent: `ulimit -u` alone bounds processes.
   */
  pids?: PidsCgroups;
}

/** A finished command: {@link RunResult} plus the limit that ended it, if one did. */
export interface BubblewrapRunResult extends RunResult {
  limit: SandboxLimitName | null;
}

/**
 * The script bash runs first inside the sandbox: hard and soft rlimits (bash sets both unless told otherwise; the
 * CPU soft limit one second under the hard one, so SIGXCPU names it before SIGKILL), no core files, then the
 * command itself (`$1`, never spliced into the script) in a fresh `bash -c`. Exit 125 when a limit cannot be set.
 */
export function limitScript(limits: CommandLimits): string {
  const kb = (bytes: number) => Math.max(1, Math.floor(bytes / 1024));
  return [
    `ulimit -c 0 -u ${limits.processes} -v ${kb(limits.memoryBytes)} -f ${Math.floor(limits.fileSizeBytes / 1024)}`,
    `ulimit -St ${limits.cpuSeconds}`,
    `ulimit -Ht ${limits.cpuSeconds + 1}`,
  ].join(" && ") + ' || { echo "sandbox: could not set resource limits" >&2; exit 125; }; exec /bin/bash -c "$1"';
}

/** The limit the exit status or the last output names (only for a failed command), else null. */
export function limitFromExit(exitCode: number | null, output: string): SandboxLimitName | null {
  if (exitCode === 0) return null;
  const tail = output.slice(-4096);
  if (exitCode === 128 + 24 || /CPU time limit exceeded/.test(tail)) return "cpu";
  if (exitCode === 128 + 25 || /File size limit exceeded|File too large/.test(tail)) return "file_size";
  if (/No space left on device/.test(tail)) return "tmp";
  if (/MemoryError|Cannot allocate memory|bad_alloc|[Oo]ut of memory|memory exhausted/.test(tail)) return "memory";
  if (/fork: (retry: )?Resource temporarily unavailable|Resource temporarily unavailable|can't start new thread/.test(tail)) return "processes";
  return null;
}

/**
 * Runs `command` in a fresh bubblewrap sandbox with `limits`. The sandbox has its own pid namespace and dies
 * with `bwrap` (`--die-with-parent`), so killing bwrap's process group ends every process the command started,
 * background jobs included, as does the command's own exit. With `options.pids` the command runs in its own pids
 * group, which is emptied and removed before this resolves. Output is captured (head and tail) up to
 * `limits.outputBytes`; past it, the command is killed with limit `output`.
 */
export async function runInBubblewrap(command: string, options: BubblewrapRunOptions): Promise<BubblewrapRunResult> {
  let group: CommandCgroup | undefined;
  try {
    group = await options.pids?.create(options.limits.processes + BWRAP_TASKS);
  } catch (err) {
    // Fail closed: without its group the command would run with no process limit that holds for root.
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { output: `sandbox: could not create the command's process-limit cgroup (${why})\n`, exitCode: null, timedOut: false, aborted: false, droppedBytes: 0, limit: null };
  }
  try {
    return await spawnSandbox(command, options, group);
  } finally {
    await group?.release();
  }
}

/** The argv that starts bwrap: through `nice` when set, and through the cgroup launcher when there is a group. */
function launchArgv(command: string, options: BubblewrapRunOptions, group: CommandCgroup | undefined): [string, string[]] {
  const { limits } = options;
  const args = bubblewrapArgs(options.root, limitScript(limits), { network: options.network, mounts: options.mounts, tmpBytes: limits.tmpBytes, argv: ["sandbox", command] });
  // `nice` (and the launcher) exec bwrap in place, so the child's pid (and process group) is bwrap's.
  const argv = limits.nice > 0 ? [NICE, "-n", String(limits.nice), options.bwrap, ...args] : [options.bwrap, ...args];
  return group ? ["/bin/sh", ["-c", JOIN_CGROUP, "sandbox-launch", group.dir, ...argv]] : [argv[0], argv.slice(1)];
}

function spawnSandbox(command: string, options: BubblewrapRunOptions, group: CommandCgroup | undefined): Promise<BubblewrapRunResult> {
  return new Promise((resolve) => {
    const { limits } = options;
    const capture = new HeadTail();
    const [file, argv] = launchArgv(command, options, group);
    // An empty environment: bwrap's own /proc/<pid>/environ holds nothing of the gateway's.
    const child = spawn(file, argv, { cwd: "/", env: {}, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let limit: SandboxLimitName | null = null;
    let aborted = false;
    let settled = false;
    let seen = 0;
    const stop = (why: SandboxLimitName | "abort") => {
      if (why === "abort") aborted = true;
      else limit ??= why;
      killGroup(child.pid);
      void group?.kill();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limits.outputBytes) {
        capture.push(chunk.subarray(0, Math.max(0, chunk.length - (seen - limits.outputBytes))));
        return stop("output");
      }
      capture.push(chunk);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const timer = setTimeout(() => stop("timeout"), Math.max(1, limits.timeoutSeconds * 1000));
    const polls = [watchPoll(options.watch, () => stop("disk")), group && watchPoll({ intervalMs: PIDS_POLL_MS, overLimit: () => group.limitHit() }, () => stop("processes"))];
    const onAbort = () => stop("abort");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const poll of polls) clearInterval(poll);
      options.signal?.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      const output = capture.text();
      if (!limit && !aborted) limit = limitFromExit(exitCode, output);
      resolve({ output, exitCode, timedOut: limit === "timeout", aborted, droppedBytes: capture.dropped, limit });
    };
    child.on("error", (err) => {
      capture.push(Buffer.from(`${err.message}\n`));
      finish(null);
    });
    // The sandbox's processes all end with bwrap, so `close` (pipes closed) follows `exit` promptly; what is left
    // in the command's pids group is killed at once.
    child.on("close", (code, sig) => finish(code ?? (sig ? 128 + 9 : null)));
    child.on("exit", (code, sig) => {
      void group?.kill();
      setTimeout(() => finish(code ?? (sig ? 128 + 9 : null)), 2000).unref();
    });
    if (options.signal?.aborted) onAbort();
  });
}

/** Calls `overLimit` every `intervalMs` (one check at a time) and `onOver` once it answers true. */
function watchPoll(watch: BubblewrapRunOptions["watch"], onOver: () => void): NodeJS.Timeout | undefined {
  if (!watch) return undefined;
  let checking = false;
  return setInterval(() => {
    if (checking) return;
    checking = true;
    void watch.overLimit().then((over) => (over ? onOver() : undefined)).finally(() => (checking = false));
  }, watch.intervalMs);
}
