// A thread's sandbox under the bubblewrap provider: LocalSandbox's file access, with `execute` isolated in
// bubblewrap and bounded (rlimits per command, a disk quota per thread, concurrency caps, an audit line each).
// The container-like counterpart of DeerFlow's aio_sandbox for a single machine.
import { statSync } from "node:fs";
import { getLogger } from "../logger.js";
import { diskUsage } from "./disk-usage.js";
import { runInBubblewrap, type BubblewrapRunResult, type SandboxLimitName } from "./bwrap-runner.js";
import { LocalSandbox, type ExecuteOptions } from "./local-sandbox.js";
import type { SandboxMount } from "./mounts.js";
import { SandboxPathError, type SandboxDirs } from "./paths.js";
import type { PidsCgroups } from "./pids-cgroup.js";
import type { SandboxLimitsConfig } from "./sandbox-config.js";

const MIB = 1024 * 1024;
/** How often the disk quota is checked while a command runs, in ms. */
const DISK_POLL_MS = 500;
/** Characters of the command kept in the audit line. */
const AUDIT_COMMAND_CHARS = 200;

/** One audit record per command (logged as `sandbox_audit`, counted in /metrics). */
export interface SandboxAuditRecord {
  user: string;
  thread: string;
  run: string | null;
  /** The command, cut to 200 characters. */
  command: string;
  exit_code: number | null;
  duration_ms: number;
  /** The limit that ended the command, or null. */
  limit: SandboxLimitName | null;
  /** Why it never ran (`concurrent_per_thread`, `concurrent_total`), or null. */
  refused: "concurrent_per_thread" | "concurrent_total" | null;
}

/** What every thread's sandbox of one provider shares: bwrap, the configured limits, the process-wide counter. */
export interface BubblewrapEnv {
  bwrap: string;
  network: "none" | "full";
  limits: SandboxLimitsConfig;
  /** Commands running now in this process (mutated by the sandboxes). */
  running: { total: number };
  /** Called once per command, after it ended or was refused. */
  onAudit?: (record: SandboxAuditRecord) => void;
  /** Where each command gets its own pids group (the process limit that holds for root); absent: `ulimit -u` only. */
  pids?: PidsCgroups;
}

/** Result of {@link BubblewrapSandbox.execute}: the run's result, and a ready message when a limit or cap stopped it. */
export interface IsolatedRunResult extends BubblewrapRunResult {
  /** Tool-facing sentence naming the limit (and its config key), or the refusal; absent when none applied. */
  limitMessage?: string;
}


/** The tool-facing sentence for a limit that ended a command. */
export function describeLimit(limit: SandboxLimitName, l: SandboxLimitsConfig, timeoutSeconds: number): string {
  switch (limit) {
    case "timeout":
      return `Command timed out after ${timeoutSeconds} seconds and was killed with all its processes (sandbox.bash_command_timeout)`;
    case "cpu":
      return `Command exceeded the CPU time limit of ${l.cpu_seconds} seconds per process and was killed (sandbox.limits.cpu_seconds)`;
    case "memory":
      return `Command ran out of memory: the limit is ${l.memory_mb} MiB of address space per process (sandbox.limits.memory_mb)`;
    case "processes":
      return `Command hit the process limit of ${l.processes} processes in the sandbox (sandbox.limits.processes)`;
    case "file_size":
      return `Command tried to write a file larger than ${l.file_size_mb} MiB (sandbox.limits.file_size_mb)`;
    case "disk":
      return `Disk quota exceeded: this thread's /mnt/user-data may hold at most ${l.disk_quota_mb} MiB (sandbox.limits.disk_quota_mb); the command was stopped. Delete files to free space`;
    case "tmp":
      return `Command filled the sandbox's /tmp or /dev/shm (${l.tmp_mb} MiB each, sandbox.limits.tmp_mb); write large files under /mnt/user-data`;
    case "output":
      return `Command produced more than ${l.output_mb} MiB of output and was killed with all its processes (sandbox.limits.output_mb); redirect large output to a file`;
  }
}

/**
 * One thread's sandbox of the bubblewrap provider. File access is LocalSandbox's (host paths checked per
 * component); {@link execute} runs the command in bubblewrap with the provider's limits. `isolated` tells the
 * bash tool that the sandbox, not a path check on the command text, is the boundary.
 */
export class BubblewrapSandbox extends LocalSandbox {
  /** Marks a sandbox whose commands cannot reach the host (the bash tool skips its host-path guard rail). */
  override readonly isolated = true;
  private running = 0;

  /** As LocalSandbox, plus the provider's shared {@link BubblewrapEnv}. */
  constructor(id: string, threadId: string, userId: string, dirs: SandboxDirs, mounts: readonly SandboxMount[], private readonly env: BubblewrapEnv) {
    super(id, threadId, userId, dirs, mounts);
  }

  /** Bytes this thread's `/mnt/user-data` uses (stops counting a little past the quota). */
  usage(): Promise<number> {
    return diskUsage(this.realRoot, this.env.limits.disk_quota_mb * MIB);
  }

  /**
   * Writes like LocalSandbox, refused when the thread's usage plus `content` would pass the disk quota.
   * @throws SandboxPathError "Disk quota exceeded ..." naming the quota.
   */
  override async writeFile(virtualPath: string, content: string, append = false): Promise<void> {
    const quota = this.env.limits.disk_quota_mb * MIB;
    if ((await this.usage()) + Buffer.byteLength(content) > quota) {
      throw new SandboxPathError(`Disk quota exceeded: this thread's /mnt/user-data may hold at most ${this.env.limits.disk_quota_mb} MiB (sandbox.limits.disk_quota_mb); delete files to free space`);
    }
    return super.writeFile(virtualPath, content, append);
  }

  /**
   * Runs `command` in a fresh bubblewrap sandbox. Refused (no process started) past `concurrent_per_thread` or
   * `concurrent_total`. The file-size rlimit is the smaller of `file_size_mb` and the quota left, so no single
   * write passes the quota; the tree is also measured every 500 ms and the command killed once over it. A
   * thread already over its quota still runs commands, with a file-size limit of 0 (deleting works, writing fails).
   */
  override async execute(command: string, options: ExecuteOptions): Promise<IsolatedRunResult> {
    const started = Date.now();
    const refused = this.running >= this.env.limits.concurrent_per_thread ? "concurrent_per_thread" : this.env.running.total >= this.env.limits.concurrent_total ? "concurrent_total" : null;
    if (refused) {
      const cap = refused === "concurrent_per_thread" ? `${this.env.limits.concurrent_per_thread} commands at once per thread` : `${this.env.limits.concurrent_total} commands at once in the gateway`;
      this.audit(command, options, started, { output: "", exitCode: null, timedOut: false, aborted: false, droppedBytes: 0, limit: null }, refused);
      return { output: "", exitCode: null, timedOut: false, aborted: false, droppedBytes: 0, limit: null, limitMessage: `Too many commands running: the limit is ${cap} (sandbox.limits.${refused}); wait for one to finish` };
    }
    this.running++;
    this.env.running.total++;
    try {
      return await this.runBounded(command, options, started);
    } finally {
      this.running--;
      this.env.running.total--;
    }
  }

  private async runBounded(command: string, options: ExecuteOptions, started: number): Promise<IsolatedRunResult> {
    const l = this.env.limits;
    const quota = l.disk_quota_mb * MIB;
    const left = Math.max(0, quota - (await this.usage()));
    const fileSize = Math.min(l.file_size_mb * MIB, left);
    const result: IsolatedRunResult = await runInBubblewrap(command, {
      bwrap: this.env.bwrap,
      root: this.realRoot,
      mounts: bindableMounts(this.mounts),
      network: this.env.network,
      signal: options.signal,
      limits: { timeoutSeconds: options.timeoutSeconds, cpuSeconds: l.cpu_seconds, memoryBytes: l.memory_mb * MIB, processes: l.processes, fileSizeBytes: fileSize, outputBytes: Math.floor(l.output_mb * MIB), tmpBytes: l.tmp_mb * MIB, nice: l.nice },
      watch: { intervalMs: DISK_POLL_MS, overLimit: async () => (await this.usage()) > quota },
      pids: this.env.pids,
    });
    // Writes of many files that together passed the quota between two polls are caught here.
    if (!result.limit && !result.aborted && (await this.usage()) > quota) result.limit = "disk";
    // A write stopped by the file-size rlimit hit the quota when the quota, not file_size_mb, set that rlimit.
    if (result.limit === "file_size" && fileSize < l.file_size_mb * MIB) result.limit = "disk";
    if (result.limit) result.limitMessage = describeLimit(result.limit, l, options.timeoutSeconds);
    this.audit(command, options, started, result, null);
    return result;
  }

  private audit(command: string, options: ExecuteOptions, started: number, result: BubblewrapRunResult, refused: SandboxAuditRecord["refused"]): void {
    const record: SandboxAuditRecord = {
      user: this.userId,
      thread: this.threadId,
      run: options.runId ?? null,
      command: command.length > AUDIT_COMMAND_CHARS ? `${command.slice(0, AUDIT_COMMAND_CHARS)}...` : command,
      exit_code: result.exitCode,
      duration_ms: Date.now() - started,
      limit: result.limit,
      refused,
    };
    getLogger().info({ sandbox_audit: record }, "sandbox command");
    this.env.onAudit?.(record);
  }
}

/**
 * The mounts in the order bwrap needs them (a parent before what is mounted inside it), leaving out one whose
 * mount point is missing inside a read-only parent (bwrap cannot create it there): the file tools still see it.
 */
export function bindableMounts(mounts: readonly SandboxMount[]): SandboxMount[] {
  const sorted = [...mounts].sort((a, b) => a.virtual.split("/").length - b.virtual.split("/").length);
  return sorted.filter((m) => {
    const parent = sorted.filter((p) => p !== m && m.virtual.startsWith(`${p.virtual}/`)).sort((a, b) => b.virtual.length - a.virtual.length)[0];
    if (!parent) return true;
    return existsDir(`${parent.host}${m.virtual.slice(parent.virtual.length)}`);
  });
}

function existsDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
